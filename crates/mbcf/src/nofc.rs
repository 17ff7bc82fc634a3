//! No-flow-control WRITEs for a process outside any job, such as the node
//! daemon: datagrams sent once, never sequenced, acknowledged or answered,
//! on a socket of the caller's own.
//!
//! Building and checking these packets lives here, with the rest of the
//! runtime's MBCF, so that whatever every MBCF datagram comes to be checked
//! for (authentication per job, later) covers them too. A [`Socket`]
//! accepts only what its [`Inbox`] names: a well-formed, unfragmented,
//! unacknowledging no-flow-control WRITE to its task id under its key.
//! Anything else is refused and counted ([`Counters`]). Jobs' tasks do not
//! use this module: their no-flow-control operations go through their
//! protocol endpoint ([`crate::Options::nofc`]).

use crate::Error;
use sss_wire::{Body, Flags, Frag, Packet, ParseError, Status, TaskId, MAX_PACKET_LEN};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::time::Duration;

/// One no-flow-control WRITE: `payload` for task `dst`'s memory at
/// (`key`, `addr`), from task `src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Write<'a> {
    /// The sending task.
    pub src: TaskId,
    /// The receiving task.
    pub dst: TaskId,
    /// Key of the segment written.
    pub key: u64,
    /// Address in that segment's owner.
    pub addr: u64,
    /// The data.
    pub payload: &'a [u8],
}

/// What a receiver accepts: WRITEs addressed to `dst` under `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Inbox {
    /// The destination task id.
    pub dst: TaskId,
    /// The only key accepted.
    pub key: u64,
}

/// Why a datagram was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Not an MBCF packet, or a corrupted one.
    #[error("not an MBCF packet: {0}")]
    Malformed(#[from] ParseError),
    /// An MBCF packet, but not a single-packet no-flow-control WRITE
    /// without ack, notify or status return.
    #[error("not a no-flow-control WRITE")]
    NotNofcWrite,
    /// Addressed to another task.
    #[error("addressed to task {0:?}")]
    Misdelivered(TaskId),
    /// Under another key.
    #[error("wrong key")]
    BadKey,
}

/// A no-flow-control WRITE as a datagram. Fails when the payload is
/// larger than a packet carries.
pub fn encode(w: &Write<'_>) -> Result<Vec<u8>, Error> {
    Packet {
        src: w.src,
        dst: w.dst,
        epoch: 0,
        seq: 0,
        ack: None,
        op: 0,
        flags: Flags {
            nofc: true,
            status_return: false,
        },
        status: Status::Ok,
        key: w.key,
        addr: w.addr,
        frag: Frag::SINGLE,
        body: Body::Write { notify: None },
        payload: w.payload,
    }
    .to_vec()
    .map_err(|_| Error::Invalid("payload too large for one packet"))
}

/// The WRITE in `datagram` if it is one `inbox` accepts.
pub fn decode<'a>(datagram: &'a [u8], inbox: &Inbox) -> Result<Write<'a>, Refusal> {
    let p = Packet::parse(datagram)?;
    let plain = p.flags.nofc
        && !p.flags.status_return
        && p.ack.is_none()
        && p.status == Status::Ok
        && p.frag == Frag::SINGLE
        && p.body == (Body::Write { notify: None });
    if !plain {
        return Err(Refusal::NotNofcWrite);
    }
    if p.dst != inbox.dst {
        return Err(Refusal::Misdelivered(p.dst));
    }
    if p.key != inbox.key {
        return Err(Refusal::BadKey);
    }
    Ok(Write {
        src: p.src,
        dst: p.dst,
        key: p.key,
        addr: p.addr,
        payload: p.payload,
    })
}

/// What a [`Socket`] sent, accepted and refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams whose send failed (a full socket buffer, no route).
    pub send_failed: u64,
    /// Datagrams received.
    pub received: u64,
    /// WRITEs accepted.
    pub accepted: u64,
    /// Refused: not an MBCF packet ([`Refusal::Malformed`]).
    pub malformed: u64,
    /// Refused: [`Refusal::NotNofcWrite`].
    pub not_nofc_write: u64,
    /// Refused: [`Refusal::Misdelivered`].
    pub misdelivered: u64,
    /// Refused: [`Refusal::BadKey`].
    pub bad_key: u64,
}

impl Counters {
    /// Every datagram refused.
    pub fn refused(&self) -> u64 {
        self.malformed + self.not_nofc_write + self.misdelivered + self.bad_key
    }

    fn count(&mut self, r: &Refusal) {
        match r {
            Refusal::Malformed(_) => self.malformed += 1,
            Refusal::NotNofcWrite => self.not_nofc_write += 1,
            Refusal::Misdelivered(_) => self.misdelivered += 1,
            Refusal::BadKey => self.bad_key += 1,
        }
    }
}

/// A udp socket sending and receiving no-flow-control WRITEs as task
/// `local`.
#[derive(Debug)]
pub struct Socket {
    sock: UdpSocket,
    local: TaskId,
    inbox: Inbox,
    /// Room for the largest MBCF packet, allocated once.
    buf: Vec<u8>,
    counters: Counters,
}

impl Socket {
    /// Binds `addr`; sends go out as task `local`, receives accept what
    /// `inbox` names.
    pub fn bind(addr: impl ToSocketAddrs, local: TaskId, inbox: Inbox) -> std::io::Result<Self> {
        Ok(Self {
            sock: UdpSocket::bind(addr)?,
            local,
            inbox,
            buf: vec![0; MAX_PACKET_LEN],
            counters: Counters::default(),
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    /// The task id sends go out as.
    pub fn local(&self) -> TaskId {
        self.local
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }

    /// Sends `payload` once to task `dst`'s (`key`, `addr`) at `to`. A
    /// datagram the network or a full buffer drops is not noticed (no flow
    /// control), only counted when the send itself fails.
    pub fn send(
        &mut self,
        to: SocketAddr,
        dst: TaskId,
        key: u64,
        addr: u64,
        payload: &[u8],
    ) -> Result<(), Error> {
        let b = encode(&Write {
            src: self.local,
            dst,
            key,
            addr,
            payload,
        })?;
        match self.sock.send_to(&b, to) {
            Ok(_) => {
                self.counters.sent += 1;
                Ok(())
            }
            Err(e) => {
                self.counters.send_failed += 1;
                Err(Error::Io(e))
            }
        }
    }

    /// Waits up to `timeout` for one datagram: the WRITE in it and its
    /// source address if the inbox accepts it, `None` on timeout or
    /// refusal (counted).
    pub fn recv(&mut self, timeout: Duration) -> Option<(SocketAddr, Write<'_>)> {
        // A zero timeout would mean "block forever".
        let t = timeout.max(Duration::from_micros(1));
        self.sock.set_read_timeout(Some(t)).ok()?;
        let (n, from) = self.sock.recv_from(&mut self.buf).ok()?;
        self.counters.received += 1;
        match decode(&self.buf[..n], &self.inbox) {
            Ok(w) => {
                self.counters.accepted += 1;
                Some((from, w))
            }
            Err(r) => {
                self.counters.count(&r);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INBOX: Inbox = Inbox {
        dst: TaskId::new(0, 0),
        key: 0x1234,
    };

    fn write(payload: &[u8]) -> Write<'_> {
        Write {
            src: TaskId::new(0, 9),
            dst: INBOX.dst,
            key: INBOX.key,
            addr: 0,
            payload,
        }
    }

    #[test]
    fn writes_survive_the_wire_and_everything_else_is_refused() {
        let b = encode(&write(b"page")).unwrap();
        assert_eq!(decode(&b, &INBOX), Ok(write(b"page")));
        assert!(matches!(
            decode(&b[..b.len() - 1], &INBOX),
            Err(Refusal::Malformed(_))
        ));
        let other = Inbox { key: 1, ..INBOX };
        assert_eq!(decode(&b, &other), Err(Refusal::BadKey));
        let elsewhere = Inbox {
            dst: TaskId::new(0, 1),
            ..INBOX
        };
        assert_eq!(
            decode(&b, &elsewhere),
            Err(Refusal::Misdelivered(INBOX.dst))
        );
        // A sequenced WRITE (as a job's task sends) is not one of these.
        let mut p = Packet::parse(&b).unwrap();
        p.flags.nofc = false;
        p.seq = 1;
        let b = p.to_vec().unwrap();
        assert_eq!(decode(&b, &INBOX), Err(Refusal::NotNofcWrite));
        let big = vec![0u8; 70_000];
        assert!(encode(&write(&big)).is_err());
    }

    #[test]
    fn a_socket_counts_what_it_refuses() {
        let mut a = Socket::bind("127.0.0.1:0", TaskId::new(0, 9), INBOX).unwrap();
        let mut b = Socket::bind("127.0.0.1:0", TaskId::new(0, 8), INBOX).unwrap();
        let to = b.local_addr().unwrap();
        a.send(to, INBOX.dst, INBOX.key, 0, b"hello").unwrap();
        a.send(to, INBOX.dst, 7, 0, b"wrong key").unwrap();
        UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .send_to(b"garbage", to)
            .unwrap();
        let long = Duration::from_secs(10);
        let (from, w) = b.recv(long).expect("the WRITE");
        assert_eq!(from, a.local_addr().unwrap());
        assert_eq!((w.src, w.payload), (TaskId::new(0, 9), &b"hello"[..]));
        assert!(b.recv(long).is_none());
        assert!(b.recv(long).is_none());
        let c = b.counters();
        assert_eq!(
            (c.received, c.accepted, c.bad_key, c.malformed),
            (3, 1, 1, 1)
        );
        assert_eq!(c.refused(), 2);
        assert_eq!(a.counters().sent, 2);
    }
}
