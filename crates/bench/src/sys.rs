//! The few system calls the baselines and floors need beyond std: a
//! receive that may or may not block, the UDP GSO/GRO and buffer socket
//! options, and a shared mapping for the cache-line floor. The bench's
//! only unsafe code lives here.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::path::Path;
use std::sync::atomic::AtomicU64;

/// `recv(2)` into `buf`; with `nowait`, `MSG_DONTWAIT` (an empty socket
/// gives `WouldBlock` at once).
pub fn recv(fd: RawFd, buf: &mut [u8], nowait: bool) -> io::Result<usize> {
    let flags = if nowait { libc::MSG_DONTWAIT } else { 0 };
    // SAFETY: buf is valid for writes of buf.len() bytes during the call.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr().cast(), buf.len(), flags) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

fn setsockopt_int(fd: RawFd, level: i32, name: i32, v: i32) -> io::Result<()> {
    // SAFETY: the option value is a live i32 whose size is passed along.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Every send on `fd` is cut by the kernel into datagrams of `seg` bytes
/// (the `UDP_SEGMENT` socket option).
pub fn set_udp_segment(fd: RawFd, seg: u16) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_UDP, libc::UDP_SEGMENT, i32::from(seg))
}

/// `SO_ZEROCOPY` (Linux UAPI; not in the libc crate).
const SO_ZEROCOPY: i32 = 60;
/// `SO_EE_ORIGIN_ZEROCOPY`: a completion of `MSG_ZEROCOPY` sends.
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED`: the kernel copied the data after all.
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;

/// Lets `fd` send with `MSG_ZEROCOPY`.
pub fn set_zerocopy(fd: RawFd) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, SO_ZEROCOPY, 1)
}

/// `send(2)` of `buf` on the connected `fd` with `MSG_ZEROCOPY`: the
/// kernel pins the pages instead of copying them and reports on the
/// error queue when it no longer needs them ([`zerocopy_done`]).
pub fn send_zerocopy(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for reads of buf.len() bytes during the call;
    // the bench never changes these bytes while sends are in flight.
    let n = unsafe { libc::send(fd, buf.as_ptr().cast(), buf.len(), libc::MSG_ZEROCOPY) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Drains `fd`'s error queue of `MSG_ZEROCOPY` completions: (sends
/// completed, of them completed with the kernel's "copied" flag).
pub fn zerocopy_done(fd: RawFd) -> (u64, u64) {
    let (mut done, mut copied) = (0, 0);
    loop {
        let mut cbuf = [0u64; 16];
        // SAFETY: msghdr is plain old data; all-zero is valid.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf);
        // SAFETY: msg describes cbuf, live across the call; no data buffer.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            return (done, copied);
        }
        // SAFETY: walking the control messages the kernel wrote into
        // cbuf with the CMSG macros, which stay within msg_controllen;
        // the payload of an IP(V6)_RECVERR message is a sock_extended_err.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let e: libc::sock_extended_err =
                    std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if e.ee_origin == SO_EE_ORIGIN_ZEROCOPY && e.ee_errno == 0 {
                    // [ee_info, ee_data]: the range of send calls done.
                    let k = u64::from(e.ee_data.wrapping_sub(e.ee_info)) + 1;
                    done += k;
                    if e.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0 {
                        copied += k;
                    }
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
    }
}

/// Receives on `fd` return coalesced segments (`UDP_GRO`).
pub fn set_udp_gro(fd: RawFd) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_UDP, libc::UDP_GRO, 1)
}

/// Asks for `bytes` of send and receive buffer (the kernel may cap it).
pub fn set_bufs(fd: RawFd, bytes: i32) {
    // Best effort: a smaller buffer only means more drops, which the
    // bandwidth figure accounts for. The FORCE options pass the system
    // cap and work for root only.
    for (force, plain) in [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ] {
        if setsockopt_int(fd, libc::SOL_SOCKET, force, bytes).is_err() {
            let _ = setsockopt_int(fd, libc::SOL_SOCKET, plain, bytes);
        }
    }
}

/// One page of a file mapped shared, so that two processes mapping the
/// same file see the same cache line.
pub struct SharedPage {
    ptr: *mut libc::c_void,
}

const PAGE: usize = 4096;

impl SharedPage {
    /// Maps the first page of `path`, creating and sizing the file when
    /// `create`.
    pub fn map(path: &Path, create: bool) -> io::Result<SharedPage> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(create)
            .open(path)?;
        if create {
            file.set_len(PAGE as u64)?;
        } else if file.metadata()?.len() < PAGE as u64 {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "file too short"));
        }
        // SAFETY: a fresh shared mapping of PAGE bytes of a file at least
        // that long; the kernel picks the address. The mapping outlives
        // the descriptor, which may close when `file` drops.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedPage { ptr })
    }

    /// The first word of the page.
    pub fn word(&self) -> &AtomicU64 {
        // SAFETY: the page is mapped, readable, writable and page-aligned
        // for as long as self lives; another process writes it only
        // through atomic operations on the same word.
        unsafe { &*self.ptr.cast::<AtomicU64>() }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: ptr is the start of a PAGE-byte mapping made in `map`;
        // no reference from `word` outlives self.
        unsafe {
            libc::munmap(self.ptr, PAGE);
        }
    }
}

/// Clock ticks per second of `/proc` CPU times (`_SC_CLK_TCK`).
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as u64
    } else {
        100
    }
}
