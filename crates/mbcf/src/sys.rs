//! The system calls the runtime needs, each behind a small safe wrapper
//! that turns -1 into `io::Error`. All `unsafe` of the crate that is not
//! raw segment memory access lives here.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::AtomicU32;
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn cvt_isize(r: isize) -> io::Result<usize> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// A shared mapping of a file, unmapped on drop.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; concurrent access discipline is the
// business of the code that reads and writes it (atomics or disjoint
// ranges), exactly as for memory shared with other processes.
unsafe impl Send for Mapping {}
// SAFETY: as above.
unsafe impl Sync for Mapping {}

/// Fails unless the file behind `fd` holds at least `len` bytes: touching
/// a mapping past the end of its file raises SIGBUS, and a file found by
/// name may still be unsized (its creator is between creating and sizing
/// it, or died there).
fn check_covers(fd: RawFd, len: usize) -> io::Result<()> {
    // SAFETY: an all-zero `stat` is a valid value for fstat to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat only writes into `st`; a bad fd gives EBADF.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if (st.st_size as u64) < len as u64 {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "shared-memory file holds {} bytes, {len} needed (not sized yet, or left by a dead process)",
                st.st_size
            ),
        ));
    }
    Ok(())
}

impl Mapping {
    /// Maps `len` bytes of `fd` shared, readable and writable; the file
    /// must already hold them.
    pub fn shared(fd: RawFd, len: usize) -> io::Result<Self> {
        Self::map(fd, len, libc::PROT_READ | libc::PROT_WRITE)
    }

    /// Maps `len` bytes of `fd` shared and read-only (an observer's view
    /// of another process's file); the file must already hold them.
    pub fn read_only(fd: RawFd, len: usize) -> io::Result<Self> {
        Self::map(fd, len, libc::PROT_READ)
    }

    fn map(fd: RawFd, len: usize, prot: libc::c_int) -> io::Result<Self> {
        check_covers(fd, len)?;
        // SAFETY: a fresh mapping chosen by the kernel aliases nothing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len.max(1),
                prot,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            ptr: p.cast(),
            len: len.max(1),
        })
    }

    /// Maps `len` bytes of `fd` shared at exactly `addr`, failing (rather
    /// than replacing anything) when that range is taken.
    pub fn shared_at(fd: RawFd, len: usize, addr: u64) -> io::Result<Self> {
        check_covers(fd, len)?;
        // SAFETY: MAP_FIXED_NOREPLACE never replaces an existing mapping; the
        // kernel refuses with EEXIST instead.
        let p = unsafe {
            libc::mmap(
                addr as *mut libc::c_void,
                len.max(1),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED_NOREPLACE,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let m = Self {
            ptr: p.cast(),
            len: len.max(1),
        };
        // Kernels before 4.17 ignore the flag and may map elsewhere.
        if m.ptr as u64 != addr {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, "address taken"));
        }
        Ok(m)
    }

    /// Start of the mapping.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and are unmapped once.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// The directory of the runtime's shared-memory files: `SSS_SHM_DIR`, by
/// default `/dev/shm`. Every process of a node (tasks, node daemon) must
/// agree on it.
pub fn shm_dir() -> io::Result<&'static std::path::Path> {
    static DIR: std::sync::OnceLock<Result<std::path::PathBuf, String>> =
        std::sync::OnceLock::new();
    let d = DIR.get_or_init(|| match std::env::var_os("SSS_SHM_DIR") {
        None => Ok("/dev/shm".into()),
        Some(v) => {
            let p = std::path::PathBuf::from(&v);
            if p.is_absolute() && p.is_dir() {
                Ok(p)
            } else {
                Err(format!(
                    "SSS_SHM_DIR={}: not an absolute path to a directory",
                    p.display()
                ))
            }
        }
    });
    d.as_deref()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.clone()))
}

fn shm_path(name: &str) -> io::Result<std::path::PathBuf> {
    Ok(shm_dir()?.join(name))
}

/// Shared-memory files this process created and has not removed, with the
/// process that created them: removed at exit, so that a task that ends
/// without finalizing (`exit` from `main`, a program started by another
/// launcher, which cleans nothing up) leaves nothing in `/dev/shm`. A
/// forked child inherits the list and must not remove its parent's files:
/// only entries of the exiting process are removed.
static CREATED: std::sync::Mutex<Vec<(u32, std::path::PathBuf)>> =
    std::sync::Mutex::new(Vec::new());

extern "C" fn remove_created_at_exit() {
    let pid = std::process::id();
    // Not `lock`: `exit` may come from a thread that holds it.
    if let Ok(list) = CREATED.try_lock() {
        for (_, path) in list.iter().filter(|(p, _)| *p == pid) {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn remember_created(path: &std::path::Path) {
    static AT_EXIT: std::sync::Once = std::sync::Once::new();
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function without arguments that touches only
        // statics; it may run at any exit of the process, which it allows.
        unsafe { libc::atexit(remove_created_at_exit) };
    });
    if let Ok(mut list) = CREATED.lock() {
        list.push((std::process::id(), path.to_path_buf()));
    }
}

fn forget_created(path: &std::path::Path) {
    if let Ok(mut list) = CREATED.lock() {
        list.retain(|(_, p)| p != path);
    }
}

/// Creates (exclusively) or opens a file in the shared-memory directory.
/// A created file gets its `len` bytes reserved before anyone maps it: a
/// sparse file on a full tmpfs would raise SIGBUS at the first touch of a
/// page, in us or in a peer that writes into it. Errors name the file: a
/// missing peer file usually means that peer has already left the job.
pub fn shm_file(name: &str, len: usize, create: bool) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let path = shm_path(name)?;
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(create)
        .mode(0o600)
        .open(&path)
        .map_err(named)?;
    if create {
        remember_created(&path);
    }
    if create && len > 0 {
        // SAFETY: plain syscall on a descriptor we own; it returns the
        // error number instead of setting errno.
        let r = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, len as libc::off_t) };
        if r != 0 {
            let _ = std::fs::remove_file(&path);
            forget_created(&path);
            let e = io::Error::from_raw_os_error(r);
            let kind = match r {
                libc::ENOSPC | libc::EFBIG | libc::ENOMEM => io::ErrorKind::StorageFull,
                _ => e.kind(),
            };
            return Err(io::Error::new(
                kind,
                format!(
                    "cannot reserve {len} bytes of shared memory for {} ({e}): {} is full \
                     or too small",
                    path.display(),
                    shm_dir().map_or_else(|_| "/dev/shm".into(), |d| d.display().to_string()),
                ),
            ));
        }
    }
    Ok(OwnedFd::from(f))
}

/// Opens a file of the shared-memory directory for reading only.
pub fn shm_file_read(name: &str) -> io::Result<OwnedFd> {
    let path = shm_path(name)?;
    let f = std::fs::File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(OwnedFd::from(f))
}

/// Creates (exclusively) a file of `len` bytes in the shared-memory
/// directory without reserving them: pages are backed when first touched,
/// and on a full directory that touch raises SIGBUS. For large, mostly
/// untouched ranges only.
pub fn shm_file_sparse(name: &str, len: usize) -> io::Result<OwnedFd> {
    let fd = shm_file(name, 0, true)?;
    let f = std::fs::File::from(fd);
    if let Err(e) = f.set_len(len as u64) {
        shm_unlink(name);
        return Err(io::Error::new(e.kind(), format!("{name}: {e}")));
    }
    Ok(OwnedFd::from(f))
}

/// Renames a shared-memory file, replacing `to` atomically.
/// The file under its new name is no longer removed at exit: a renamed
/// file (the node daemon's page) is published for others.
pub fn shm_rename(from: &str, to: &str) -> io::Result<()> {
    let from = shm_path(from)?;
    std::fs::rename(&from, shm_path(to)?)?;
    forget_created(&from);
    Ok(())
}

/// Removes a shared-memory file; missing files are fine.
pub fn shm_unlink(name: &str) {
    if let Ok(p) = shm_path(name) {
        let _ = std::fs::remove_file(&p);
        forget_created(&p);
    }
}

/// True when `addr .. addr + len` of this process is mapped readable, and
/// writable too if `write`, with no hole (per /proc/self/maps). Registered
/// memory is written by the progress thread and by same-node peers: an
/// unmapped or read-only page there would kill the task at the first
/// remote WRITE.
pub fn range_mapped(addr: u64, len: u64, write: bool) -> io::Result<bool> {
    let Some(end) = addr.checked_add(len) else {
        return Ok(false);
    };
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let mut at = addr;
    // Lines are sorted by address; walk them until the range is covered.
    for line in maps.lines() {
        if at >= end {
            break;
        }
        let mut f = line.split_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else {
            continue;
        };
        let Some((lo, hi)) = range.split_once('-') else {
            continue;
        };
        let (Ok(lo), Ok(hi)) = (u64::from_str_radix(lo, 16), u64::from_str_radix(hi, 16)) else {
            continue;
        };
        if hi <= at {
            continue;
        }
        let p = perms.as_bytes();
        let ok = lo <= at && p.first() == Some(&b'r') && (!write || p.get(1) == Some(&b'w'));
        if !ok {
            return Ok(false);
        }
        at = hi;
    }
    Ok(at >= end)
}

/// The CPUs the calling thread may run on, ascending.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the kernel writes at most size_of::<cpu_set_t>() bytes into
    // `set`.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `i` < CPU_SETSIZE, inside the set.
        .filter(|&i| unsafe { libc::CPU_ISSET(i, &set) })
        .collect())
}

/// The CPU the calling thread runs on (a vDSO call), `None` when the
/// kernel cannot say.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: no arguments; -1 when the kernel cannot say.
    u32::try_from(unsafe { libc::sched_getcpu() }).ok()
}

/// Moves the calling thread off the CPU it runs on, to another CPU it may
/// run on, and leaves its affinity as it was: with the mask less the
/// current CPU for a moment the kernel migrates the thread at once, and
/// with the mask back it has no reason to move it again. False when the
/// thread may run on one CPU only or the kernel refused.
pub fn move_off_cpu() -> bool {
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: the kernel writes at most `size` bytes into `set`.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return false;
    }
    let Some(cpu) = current_cpu().map(|c| c as usize) else {
        return false;
    };
    // SAFETY: `set` is a valid set.
    if cpu >= libc::CPU_SETSIZE as usize || unsafe { libc::CPU_COUNT(&set) } < 2 {
        return false;
    }
    let mut others = set;
    // SAFETY: `cpu` < CPU_SETSIZE was checked above.
    unsafe { libc::CPU_CLR(cpu, &mut others) };
    // SAFETY: the kernel reads `size` bytes of each set.
    unsafe {
        if libc::sched_setaffinity(0, size, &others) != 0 {
            return false;
        }
        // Restoring cannot fail where narrowing did not (same thread,
        // a superset); were it to, the thread keeps all CPUs but one.
        libc::sched_setaffinity(0, size, &set);
    }
    true
}

/// Binds the calling thread to `cpu`; threads it starts later inherit it.
pub fn bind_to_cpu(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: an all-zero cpu_set_t is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` < CPU_SETSIZE was checked above.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: the kernel reads size_of::<cpu_set_t>() bytes of `set`.
    cvt(unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) })?;
    Ok(())
}

/// Blocks while `*word == expected`, at most `timeout`. Spurious returns
/// are allowed; callers re-check their condition.
/// Returns whether the timeout passed (no wake came).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) -> bool {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: word is a valid, aligned 32-bit location for the duration of
    // the call; FUTEX_WAIT (shared, as the word may live in shared memory)
    // only reads it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            tsp,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    r != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ETIMEDOUT)
}

/// Wakes every waiter blocked on `word`.
pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: as for futex_wait; FUTEX_WAKE does not touch the word.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// A non-blocking eventfd used to wake a thread blocked in `poll`.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new eventfd.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the returned fd is owned by us alone.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        // SAFETY: fd is a fresh, valid descriptor nobody else owns.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the fd readable.
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64.
        unsafe {
            libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    /// Clears pending notifications.
    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64; non-blocking.
        unsafe {
            libc::read(self.0.as_raw_fd(), (&mut v as *mut u64).cast(), 8);
        }
    }

    /// The descriptor, for poll.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// The most descriptors [`poll_readable`] watches at once.
pub const POLL_MAX: usize = 8;

/// Waits until one of `fds` (at most [`POLL_MAX`]) is readable or
/// `timeout` passes. Returns the readiness of each descriptor as a bit
/// mask (bit `i` for `fds[i]`). Allocates nothing: the progress thread
/// polls on every round.
pub fn poll_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<u32> {
    if fds.len() > POLL_MAX {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut p = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; POLL_MAX];
    for (slot, &fd) in p.iter_mut().zip(fds) {
        slot.fd = fd;
        slot.events = libc::POLLIN;
    }
    // ppoll, not poll: a 200 µs timeout must not become a millisecond.
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let tp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: p holds fds.len() initialized pollfd structures; tp is null
    // or points to a timespec that outlives the call; no signal mask.
    let r = unsafe {
        libc::ppoll(
            p.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            tp,
            std::ptr::null(),
        )
    };
    if r == -1 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(p[..fds.len()]
        .iter()
        .enumerate()
        .filter(|(_, x)| x.revents != 0)
        .fold(0, |m, (i, _)| m | 1 << i))
}

/// Writes `data` at `remote_addr` in process `pid` (same user).
pub fn process_vm_write(pid: i32, remote_addr: u64, data: &[u8]) -> io::Result<usize> {
    let local = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let remote = libc::iovec {
        iov_base: remote_addr as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: the local iovec describes a valid readable buffer; the kernel
    // checks the remote range against the target's address space.
    cvt_isize(unsafe { libc::process_vm_writev(pid, &local, 1, &remote, 1, 0) })
}

/// Reads `buf.len()` bytes at `remote_addr` in process `pid` (same user).
pub fn process_vm_read(pid: i32, remote_addr: u64, buf: &mut [u8]) -> io::Result<usize> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: remote_addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: the local iovec describes a valid writable buffer; the kernel
    // checks the remote range.
    cvt_isize(unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) })
}

/// Random bytes from the OS CSPRNG.
pub fn random_u64() -> u64 {
    let mut b = [0u8; 8];
    // getrandom only fails when the OS has no entropy source at all, which
    // Linux always has; fall back to the clock rather than abort.
    if getrandom::fill(&mut b).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        return t ^ 0x9e37_79b9_7f4a_7c15;
    }
    u64::from_ne_bytes(b)
}

/// Sets SO_RCVBUF and SO_SNDBUF (best effort: the kernel caps them).
pub fn set_socket_buffers(fd: RawFd, bytes: i32) {
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: passes a valid int of the right size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&bytes as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            );
        }
    }
}

/// The receive buffer the kernel gave the socket (`SO_RCVBUF`: twice
/// what was asked, within `net.core.rmem_max`, the other half its
/// bookkeeping); `None` when it cannot say.
pub fn receive_buffer(fd: RawFd) -> Option<usize> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are a valid int and its size.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(v).and_then(|v| usize::try_from(v).ok())
}

/// Asks the kernel to coalesce received datagrams of one flow (UDP GRO);
/// best effort — older kernels simply deliver them one by one.
pub fn enable_gro(fd: RawFd) {
    let one: i32 = 1;
    // SAFETY: passes a valid int of the right size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&one as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
    }
}

/// The MTU of the kernel's route from `from` to `to`: what `IP_MTU`
/// (`IPV6_MTU`) reports on a datagram socket connected there. Connecting
/// sends nothing. `None` when the kernel cannot say.
pub fn route_mtu(from: std::net::IpAddr, to: std::net::SocketAddr) -> Option<usize> {
    let s = std::net::UdpSocket::bind((from, 0)).ok()?;
    s.connect(to).ok()?;
    let (level, name) = match to {
        std::net::SocketAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_MTU),
        std::net::SocketAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_MTU),
    };
    let mut mtu: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `mtu` and `len` are valid for writes of the sizes passed,
    // for the duration of the call.
    let r = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            level,
            name,
            (&mut mtu as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    (r == 0 && mtu > 0).then_some(mtu as usize)
}

fn sockaddr(addr: std::net::SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        std::net::SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and
            // suitably aligned for it.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        std::net::SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut ss as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (ss, len as libc::socklen_t)
}

/// A run of datagrams in a send buffer: `len` bytes from `off`, cut into
/// datagrams of `seg` bytes (the last may be shorter), all to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub off: usize,
    pub len: usize,
    pub seg: u16,
    pub dst: std::net::SocketAddr,
}

/// Most runs handed to one `sendmmsg`.
const RUNS_PER_CALL: usize = 64;

/// Sends every run of `buf` (each a UDP GSO message when it holds more
/// than one datagram) with as few `sendmmsg` calls as possible; the runs
/// sent, stopping at the first that fails (with its error when none
/// went). Runs must lie inside `buf`.
pub fn send_runs(fd: RawFd, buf: &[u8], runs: &[Run]) -> io::Result<usize> {
    if runs
        .iter()
        .any(|r| r.off.checked_add(r.len).is_none_or(|e| e > buf.len()))
    {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // On the stack: this runs at every flush, a small send's too.
    // SAFETY (the three below): sockaddr_storage, iovec and mmsghdr are
    // plain old data; all-zero is a valid value of each.
    let mut names: [libc::sockaddr_storage; RUNS_PER_CALL] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut iovs: [libc::iovec; RUNS_PER_CALL] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msgs: [libc::mmsghdr; RUNS_PER_CALL] = unsafe { std::mem::zeroed() };
    // One cmsg carrying a u16 per message, 8-byte aligned.
    let mut cbufs = [[0u64; 4]; RUNS_PER_CALL];
    let mut sent = 0;
    for chunk in runs.chunks(RUNS_PER_CALL) {
        let k = chunk.len();
        for (i, r) in chunk.iter().enumerate() {
            let (ss, slen) = sockaddr(r.dst);
            names[i] = ss;
            iovs[i] = libc::iovec {
                iov_base: buf[r.off..].as_ptr() as *mut libc::c_void,
                iov_len: r.len,
            };
            let m = &mut msgs[i].msg_hdr;
            m.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
            m.msg_namelen = slen;
            m.msg_iov = &mut iovs[i];
            m.msg_iovlen = 1;
            if r.len > usize::from(r.seg) {
                m.msg_control = cbufs[i].as_mut_ptr().cast();
                // SAFETY: CMSG_SPACE is a pure size computation.
                m.msg_controllen = unsafe { libc::CMSG_SPACE(2) } as usize;
                // SAFETY: msg_control points to this message's cbuf, large
                // enough for one cmsg with a u16 (CMSG_SPACE(2) <= 32
                // bytes); CMSG_FIRSTHDR/CMSG_DATA stay inside.
                unsafe {
                    let c = libc::CMSG_FIRSTHDR(m);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = libc::UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), r.seg);
                }
            } else {
                m.msg_control = std::ptr::null_mut();
                m.msg_controllen = 0;
            }
        }
        let mut at = 0;
        while at < k {
            // SAFETY: headers at..k describe buffers (names, iovecs, cmsg
            // space, `buf`) that live across the call.
            let n = unsafe {
                libc::sendmmsg(fd, msgs[at..k].as_mut_ptr(), (k - at) as libc::c_uint, 0)
            };
            if n <= 0 {
                let e = io::Error::last_os_error();
                return if sent + at == 0 {
                    Err(e)
                } else {
                    Ok(sent + at)
                };
            }
            at += n as usize;
        }
        sent += at;
    }
    Ok(sent)
}

/// The address in `ss` (as filled in by the kernel), if IPv4 or IPv6.
fn from_sockaddr(ss: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    match i32::from(ss.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in;
            // sockaddr_storage is larger and aligned for it.
            let sin: libc::sockaddr_in =
                unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            let ip = std::net::Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes());
            Some((ip, u16::from_be(sin.sin_port)).into())
        }
        libc::AF_INET6 => {
            // SAFETY: as above, for sockaddr_in6.
            let sin6: libc::sockaddr_in6 =
                unsafe { std::ptr::read((ss as *const libc::sockaddr_storage).cast()) };
            let ip = std::net::Ipv6Addr::from(sin6.sin6_addr.s6_addr);
            Some((ip, u16::from_be(sin6.sin6_port)).into())
        }
        _ => None,
    }
}

/// Receives into `buf` without blocking; returns the bytes (several
/// datagrams of one source when the kernel coalesced them, see
/// [`crate::shm`]'s `split_received`) and the source address.
pub fn recv_from(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Option<std::net::SocketAddr>)> {
    // SAFETY: sockaddr_storage is plain old data; all-zero is valid.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
    // SAFETY: `buf` and `ss` are valid for writes of the lengths given;
    // MSG_DONTWAIT never blocks.
    let n = cvt_isize(unsafe {
        libc::recvfrom(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            libc::MSG_DONTWAIT,
            (&mut ss as *mut libc::sockaddr_storage).cast(),
            &mut len,
        )
    })?;
    Ok((n, (len > 0).then(|| from_sockaddr(&ss)).flatten()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    /// A hand-over that keeps finding its CPU taken moves the thread:
    /// somewhere else, with the affinity it had.
    #[test]
    fn a_thread_moves_off_its_cpu_and_keeps_its_affinity() {
        let before = allowed_cpus().unwrap();
        if before.len() < 2 {
            return;
        }
        // Start on the first allowed CPU, free to run on all.
        bind_to_cpu(before[0]).unwrap();
        // SAFETY: the kernel reads size_of::<cpu_set_t>() bytes of `set`;
        // CPU_SET gets indices below CPU_SETSIZE.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            for &c in &before {
                libc::CPU_SET(c, &mut set);
            }
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0
            );
        }
        // SAFETY: no arguments.
        let was = unsafe { libc::sched_getcpu() };
        assert!(move_off_cpu());
        // SAFETY: no arguments.
        let now = unsafe { libc::sched_getcpu() };
        assert_ne!(was, now, "still on CPU {was}");
        assert_eq!(allowed_cpus().unwrap(), before);
        // One CPU allowed: nowhere to go.
        bind_to_cpu(before[0]).unwrap();
        assert!(!move_off_cpu());
    }

    /// Runs of different sizes and peers leave in one call and arrive as
    /// the datagrams they were cut into.
    #[test]
    fn runs_arrive_as_their_datagrams() {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
        for s in [&a, &b] {
            s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
                .unwrap();
        }
        let buf: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let runs = [
            // Three datagrams of 1000, the last of 500.
            Run {
                off: 0,
                len: 2500,
                seg: 1000,
                dst: a.local_addr().unwrap(),
            },
            // One of 300 to the other socket.
            Run {
                off: 2500,
                len: 300,
                seg: 300,
                dst: b.local_addr().unwrap(),
            },
            // Two of 700.
            Run {
                off: 2800,
                len: 1400,
                seg: 700,
                dst: a.local_addr().unwrap(),
            },
        ];
        let sent = match send_runs(tx.as_raw_fd(), &buf, &runs) {
            Ok(n) => n,
            // A kernel without UDP GSO: nothing to check here.
            Err(_) => return,
        };
        assert_eq!(sent, 3);
        let mut got = Vec::new();
        let mut d = [0u8; 2048];
        for _ in 0..5 {
            let n = a.recv(&mut d).unwrap();
            got.push(d[..n].to_vec());
        }
        let want: Vec<&[u8]> = vec![
            &buf[0..1000],
            &buf[1000..2000],
            &buf[2000..2500],
            &buf[2800..3500],
            &buf[3500..4200],
        ];
        assert_eq!(got, want);
        let n = b.recv(&mut d).unwrap();
        assert_eq!(&d[..n], &buf[2500..2800]);
        // A run outside the buffer is refused before anything is sent.
        let bad = [Run {
            off: 9_900,
            len: 200,
            seg: 100,
            dst: a.local_addr().unwrap(),
        }];
        assert!(send_runs(tx.as_raw_fd(), &buf, &bad).is_err());
    }
}
