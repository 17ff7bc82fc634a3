//! Socket baselines under the three waiting policies of [`Wait`], and the
//! spinning loops of the floors. A busy-polling socket never sleeps, as
//! MBCF's waiters do not while they spin, so the two compare fairly.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::plan::Wait;
use crate::sys;

/// Receives into `buf` from `fd` under `wait`: `Block` sleeps in `recv`
/// (bounded by the socket's receive timeout), `Poll` calls
/// `recv(MSG_DONTWAIT)` until data or `limit`, `Hybrid` polls for `spin`
/// and then blocks.
pub fn recv(
    fd: RawFd,
    buf: &mut [u8],
    wait: Wait,
    spin: Duration,
    limit: Duration,
) -> io::Result<usize> {
    let poll_for = match wait {
        Wait::Block => Duration::ZERO,
        Wait::Poll => limit,
        Wait::Hybrid => spin,
    };
    let t0 = Instant::now();
    let mut tries = 0u32;
    while !poll_for.is_zero() {
        match sys::recv(fd, buf, true) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) => {}
            r => return r,
        }
        tries = tries.wrapping_add(1);
        // Reading the clock costs far less than the system call, but
        // there is no need to do it every time when polling for long.
        if (wait == Wait::Hybrid || tries % 64 == 0) && t0.elapsed() >= poll_for {
            if wait == Wait::Poll {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no data"));
            }
            break;
        }
    }
    loop {
        match sys::recv(fd, buf, false) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return r,
        }
    }
}

/// Fills `buf` from the stream `fd` under `wait`.
pub fn read_exact(
    fd: RawFd,
    buf: &mut [u8],
    wait: Wait,
    spin: Duration,
    limit: Duration,
) -> io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        match recv(fd, &mut buf[at..], wait, spin, limit)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => at += n,
        }
    }
    Ok(())
}

/// Spins until `word` reaches `want`; `TimedOut` after `limit`. Yields
/// the CPU now and then so that two spinners sharing one CPU still make
/// progress (never on a quiet machine: a round trip takes far less).
pub fn spin_until(word: &AtomicU64, want: u64, limit: Duration) -> io::Result<()> {
    let mut n = 0u32;
    let mut t0 = None;
    while word.load(Ordering::Acquire) < want {
        std::hint::spin_loop();
        n = n.wrapping_add(1);
        if n % (1 << 14) == 0 {
            let t = *t0.get_or_insert_with(Instant::now);
            if t.elapsed() > limit {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "peer silent"));
            }
            std::thread::yield_now();
        }
    }
    Ok(())
}

/// Datagrams received from a stream of GSO sends: the bytes that arrived
/// and the time from `start` to the last of them. Stops when `expect`
/// bytes arrived or nothing came for `quiet` (the rest were dropped).
pub fn drain_datagrams(
    fd: RawFd,
    buf: &mut [u8],
    wait: Wait,
    expect: u64,
    quiet: Duration,
    start: Instant,
) -> io::Result<(u64, Duration)> {
    let (mut got, mut last) = (0u64, Duration::ZERO);
    while got < expect {
        match recv(fd, buf, wait, Duration::ZERO, quiet) {
            Ok(n) => {
                got += n as u64;
                last = start.elapsed();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(e) => return Err(e),
        }
    }
    Ok((got, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    #[test]
    fn every_policy_receives_and_poll_times_out() {
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        b.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 16];
        for wait in Wait::ALL {
            a.send_to(b"ping", b.local_addr().unwrap()).unwrap();
            let n = recv(
                b.as_raw_fd(),
                &mut buf,
                wait,
                Duration::from_micros(50),
                Duration::from_secs(5),
            )
            .unwrap();
            assert_eq!(&buf[..n], b"ping");
        }
        let e = recv(
            b.as_raw_fd(),
            &mut buf,
            Wait::Poll,
            Duration::ZERO,
            Duration::from_millis(5),
        )
        .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn spin_until_returns_when_reached_and_times_out() {
        let w = AtomicU64::new(3);
        spin_until(&w, 3, Duration::from_millis(1)).unwrap();
        let e = spin_until(&w, 4, Duration::from_millis(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }
}
