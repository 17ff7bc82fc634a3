//! Task side of the TCP rendezvous with the launcher's [`crate::BootServer`].

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::frame::{self, Frame};
use crate::BootError;

/// A task's connection to the boot server.
#[derive(Debug)]
pub(crate) struct TcpClient {
    stream: TcpStream,
    addr: String,
    round: u32,
    size: u32,
    timeout: Duration,
}

impl TcpClient {
    /// Connects to `spec` (`HOST:PORT`) and says hello. Retries refused
    /// connections until `timeout`: a server on another host may still be
    /// starting when a fast task gets there.
    pub(crate) fn connect(
        spec: &str,
        job: u32,
        rank: u32,
        size: u32,
        timeout: Duration,
        secret: Option<&crate::auth::JobSecret>,
    ) -> Result<TcpClient, BootError> {
        let addrs: Vec<SocketAddr> = spec
            .to_socket_addrs()
            .map_err(|e| BootError::BadEnv {
                var: crate::vars::BOOT,
                value: format!("tcp:{spec}"),
                reason: format!("cannot resolve the server address: {e}"),
            })?
            .collect();
        let deadline = Instant::now() + timeout;
        let mut last: Option<io::Error> = None;
        let stream = 'outer: loop {
            for a in &addrs {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break 'outer None;
                }
                match TcpStream::connect_timeout(a, left.min(Duration::from_secs(5))) {
                    Ok(s) => break 'outer Some(s),
                    Err(e) if server_not_there_yet(&e) => last = Some(e),
                    Err(e) => return Err(connect_failed(spec, e)),
                }
            }
            if Instant::now() >= deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let Some(stream) = stream else {
            let why = last
                .map(|e| format!(" (last error: {e})"))
                .unwrap_or_default();
            return Err(BootError::Timeout {
                what: format!("connecting to the boot server at {spec}{why}"),
                secs: timeout.as_secs_f64(),
            });
        };
        let setup = |s: &TcpStream| -> io::Result<()> {
            s.set_nodelay(true)?;
            s.set_read_timeout(Some(timeout))?;
            s.set_write_timeout(Some(timeout))
        };
        setup(&stream).map_err(|e| BootError::io("configuring the boot connection", e))?;
        let mut c = TcpClient {
            stream,
            addr: spec.to_string(),
            round: 0,
            size,
            timeout,
        };
        let f = c.recv("waiting for the server's challenge")?;
        let nonce: [u8; crate::auth::SECRET_LEN] = match f.kind {
            frame::CHALLENGE => f.body.as_slice().try_into().map_err(|_| {
                BootError::Protocol(format!("a challenge of {} bytes", f.body.len()))
            })?,
            frame::ERROR => return Err(BootError::Refused(lossy(&f.body))),
            k => {
                return Err(BootError::Protocol(format!(
                    "expected CHALLENGE, got frame kind {k}"
                )))
            }
        };
        let tag = crate::auth::hello_tag(secret, &nonce, job, rank, size);
        let hello = frame::hello(job, rank, size, &tag);
        c.send(frame::HELLO, &hello, "saying hello")?;
        let f = c.recv("waiting for the server's welcome")?;
        match f.kind {
            frame::WELCOME => Ok(c),
            frame::ERROR => Err(BootError::Refused(lossy(&f.body))),
            k => Err(BootError::Protocol(format!(
                "expected WELCOME, got frame kind {k}"
            ))),
        }
    }

    /// One allgather round.
    pub(crate) fn allgather(&mut self, data: &[u8]) -> Result<Vec<Vec<u8>>, BootError> {
        let round = self.round;
        let body = frame::round(round, data);
        self.send(frame::ROUND, &body, &format!("sending round {round}"))?;
        let f = self.recv(&format!("waiting for the other tasks in round {round}"))?;
        match f.kind {
            frame::GATHERED => {
                let (r, parts) = frame::parse_gathered(&f.body).map_err(BootError::Protocol)?;
                if r != round || parts.len() != self.size as usize {
                    return Err(BootError::Protocol(format!(
                        "answer for round {r} with {} parts, expected round {round} with {}",
                        parts.len(),
                        self.size
                    )));
                }
                self.round += 1;
                Ok(parts)
            }
            frame::ERROR => Err(BootError::Refused(lossy(&f.body))),
            k => Err(BootError::Protocol(format!(
                "expected GATHERED, got frame kind {k}"
            ))),
        }
    }

    fn send(&mut self, kind: u8, body: &[u8], what: &str) -> Result<(), BootError> {
        frame::write_frame(&mut self.stream, kind, body).map_err(|e| self.map_err(e, what))
    }

    fn recv(&mut self, what: &str) -> Result<Frame, BootError> {
        frame::read_frame(&mut self.stream, frame::MAX_TO_TASK).map_err(|e| self.map_err(e, what))
    }

    /// Sorts an I/O error into timeout, server gone, or other.
    fn map_err(&self, e: io::Error, what: &str) -> BootError {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => BootError::Timeout {
                what: what.to_string(),
                secs: self.timeout.as_secs_f64(),
            },
            ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe => BootError::ServerGone {
                addr: self.addr.clone(),
                what: what.to_string(),
            },
            ErrorKind::InvalidData => BootError::Protocol(format!("{what}: {e}")),
            _ => BootError::io(what, e),
        }
    }
}

/// Errors a server that is still starting, or a network still coming up,
/// can cause; others (out of descriptors, no permission) will not go away
/// by waiting for the boot timeout.
fn server_not_there_yet(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::TimedOut
            | ErrorKind::WouldBlock
            | ErrorKind::Interrupted
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::AddrNotAvailable
    )
}

/// The error for a connection attempt that cannot succeed by retrying.
fn connect_failed(spec: &str, e: io::Error) -> BootError {
    // EMFILE, ENFILE: std has no ErrorKind for them.
    let why = match e.raw_os_error() {
        Some(24) => " (out of file descriptors: the process reached its limit, see ulimit -n)",
        Some(23) => " (out of file descriptors: the system-wide limit is reached)",
        _ => "",
    };
    BootError::io(format!("connecting to the boot server at {spec}{why}"), e)
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}
