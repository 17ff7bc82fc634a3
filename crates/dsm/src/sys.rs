//! The system calls the DSM needs — anonymous reservations, `madvise`,
//! userfaultfd and an eventfd — behind a small safe wrapper, and the
//! raw-address copies the DSM's memory needs (`unsafe fn`s: their callers,
//! a few accessors in `shared` and `protocol::directory` and `Dsm::store`,
//! check the range against the mapping first). Every -1 becomes an
//! `io::Error`.
//!
//! The userfaultfd ABI (`linux/userfaultfd.h`) is not in the `libc` crate,
//! so its structs and ioctl numbers are declared here.

#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// Page size the DSM works in (x86-64 and aarch64 4 KiB kernels).
pub const PAGE: usize = 4096;

const UFFD_API: u64 = 0xAA;
const UFFDIO_API: libc::c_ulong = 0xC018_AA3F;
const UFFDIO_REGISTER: libc::c_ulong = 0xC020_AA00;
const UFFDIO_WAKE: libc::c_ulong = 0x8010_AA02;
const UFFDIO_COPY: libc::c_ulong = 0xC028_AA03;
const UFFDIO_WRITEPROTECT: libc::c_ulong = 0xC018_AA06;
const REGISTER_MODE_MISSING: u64 = 1;
const REGISTER_MODE_WP: u64 = 2;
const COPY_MODE_WP: u64 = 2;
const WRITEPROTECT_MODE_WP: u64 = 1;
const FEATURE_PAGEFAULT_FLAG_WP: u64 = 1;
const FEATURE_SIGBUS: u64 = 1 << 7;
const EVENT_PAGEFAULT: u8 = 0x12;
const PAGEFAULT_FLAG_WRITE: u64 = 1;
const PAGEFAULT_FLAG_WP: u64 = 2;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct UffdioRange {
    start: u64,
    len: u64,
}

#[repr(C)]
struct UffdioRegister {
    range: UffdioRange,
    mode: u64,
    ioctls: u64,
}

#[repr(C)]
struct UffdioCopy {
    dst: u64,
    src: u64,
    len: u64,
    mode: u64,
    copy: i64,
}

#[repr(C)]
struct UffdioWriteprotect {
    range: UffdioRange,
    mode: u64,
}

/// `struct uffd_msg` for page faults: event, then flags and address.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct UffdMsg {
    event: u8,
    _r1: u8,
    _r2: u16,
    _r3: u32,
    flags: u64,
    address: u64,
    _feat: u64,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// A private anonymous reservation: readable and writable so userfaultfd
/// can register it, `MAP_NORESERVE` so no swap is accounted, backed page
/// by page only when a fault is resolved. Unmapped on drop.
#[derive(Debug)]
pub struct Reservation {
    base: usize,
    len: usize,
}

impl Reservation {
    /// Reserves `len` bytes anywhere (`at` = None) or exactly at `at`,
    /// never replacing an existing mapping.
    pub fn new(len: usize, at: Option<usize>) -> io::Result<Self> {
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | libc::MAP_NORESERVE
            | if at.is_some() {
                libc::MAP_FIXED_NOREPLACE
            } else {
                0
            };
        // SAFETY: a fresh anonymous mapping; MAP_FIXED_NOREPLACE refuses
        // (EEXIST) instead of replacing anything already mapped.
        let p = unsafe {
            libc::mmap(
                at.unwrap_or(0) as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let r = Self {
            base: p as usize,
            len,
        };
        if at.is_some_and(|a| a != r.base) {
            return Err(io::Error::new(io::ErrorKind::AddrInUse, "address taken"));
        }
        Ok(r)
    }

    /// First byte.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Drops the pages in `[addr, addr+len)` (inside the reservation), so
    /// the next access faults again.
    pub fn discard(&self, addr: usize, len: usize) -> io::Result<()> {
        if addr < self.base || addr + len > self.base + self.len {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: the range lies inside our own anonymous reservation;
        // MADV_DONTNEED only drops page contents, never the mapping.
        check(unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED) })
            .map(|_| ())
    }
}

impl Reservation {
    /// Maps the pages of the shared mapping at `src` over
    /// `[addr, addr+len)` of the reservation (`mremap` with old size 0
    /// makes a second mapping of the same pages): stores there are stores
    /// to `src`. The new mapping is not registered with any userfaultfd.
    ///
    /// # Safety
    /// `[src, src+len)` lies in one live `MAP_SHARED` mapping that
    /// outlives the reservation's use of these pages (a segment of this
    /// task), and nothing in this process relies on the bytes now at
    /// `[addr, addr+len)` (they are replaced).
    pub unsafe fn map_shared(&self, addr: usize, src: usize, len: usize) -> io::Result<()> {
        if addr % PAGE != 0 || src % PAGE != 0 || len % PAGE != 0 || len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        if addr < self.base || addr + len > self.base + self.len {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: the destination is inside our own reservation (checked)
        // and its bytes are the caller's to replace; the source is a live
        // shared mapping (caller), which old size 0 duplicates, not moves.
        let p = unsafe {
            libc::mremap(
                src as *mut libc::c_void,
                0,
                len,
                libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
                addr as *mut libc::c_void,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Fills the page tables of `[addr, addr+len)`, a run mapped with
    /// [`Reservation::map_shared`], in one call (`MADV_POPULATE_WRITE`),
    /// instead of a minor fault a page at first touch. Best effort: a
    /// kernel without it (before 5.14) leaves the pages to fault.
    pub fn populate(&self, addr: usize, len: usize) {
        if addr < self.base || addr + len > self.base + self.len {
            return;
        }
        // SAFETY: inside our own reservation (checked); populating only
        // allocates and maps the pages of the shared mapping there, as
        // the stores about to come would, and changes no byte.
        let _ = unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_POPULATE_WRITE) };
    }

    /// Puts fresh reservation (anonymous, untouched) back over
    /// `[addr, addr+len)`, undoing [`Reservation::map_shared`].
    pub fn unmap_shared(&self, addr: usize, len: usize) -> io::Result<()> {
        if addr % PAGE != 0 || addr < self.base || addr + len > self.base + self.len {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: inside our own reservation (checked), whose bytes there
        // are ours to replace.
        unsafe { anon_fixed(addr, len) }
    }
}

/// Fresh anonymous, unreserved memory over `[addr, addr+len)`, replacing
/// whatever was mapped there (MAP_FIXED replaces exactly that range).
///
/// # Safety
/// The range is this process's to replace: nothing relies on its bytes
/// and no Rust object lives there.
unsafe fn anon_fixed(addr: usize, len: usize) -> io::Result<()> {
    // SAFETY: the caller's contract.
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: base/len came from a successful mmap, unmapped once.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

/// Memory of the program (its global variables) that the DSM took over:
/// replaced by an anonymous mapping at the same address, which userfaultfd
/// can register. Never unmapped: the program's code refers to it.
#[derive(Debug)]
pub struct Adopted {
    base: usize,
    len: usize,
}

impl Adopted {
    /// Maps fresh anonymous memory over `[addr, addr+len)` (page-aligned),
    /// replacing what was there.
    ///
    /// # Safety
    /// Nothing in this process touches `[addr, addr+len)` until this
    /// returns (its old bytes are lost; the caller saved what it needs),
    /// and no Rust object lives there.
    pub unsafe fn replace(addr: usize, len: usize) -> io::Result<Self> {
        if addr % PAGE != 0 || len % PAGE != 0 || len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: the caller guarantees the range is ours to replace and
        // untouched meanwhile.
        unsafe { anon_fixed(addr, len) }?;
        Ok(Self { base: addr, len })
    }

    /// First byte.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Drops the pages in `[addr, addr+len)` (inside the mapping), so the
    /// next access faults again.
    pub fn discard(&self, addr: usize, len: usize) -> io::Result<()> {
        if addr < self.base || addr + len > self.base + self.len {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        // SAFETY: the range lies inside the anonymous mapping we made;
        // MADV_DONTNEED only drops page contents, never the mapping.
        check(unsafe { libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED) })
            .map(|_| ())
    }
}

/// A page fault reported by userfaultfd.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Faulting address.
    pub addr: usize,
    /// The access was a write.
    pub write: bool,
    /// A write-protect fault (the page is present but protected).
    pub wp: bool,
}

/// Only faults from user mode: the DSM's own accesses are user-mode
/// copies, and this is the mode the kernel grants ordinary users under the
/// default `vm.unprivileged_userfaultfd = 0` (Linux >= 5.11).
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
/// `_IO(0xAA, 0x00)` on `/dev/userfaultfd` (Linux >= 6.1): a userfaultfd
/// for whoever may open the device, whatever the sysctl says.
const USERFAULTFD_IOC_NEW: libc::c_ulong = 0xAA00;
const USERFAULTFD_DEV: &str = "/dev/userfaultfd";

/// The `userfaultfd` system call with `flags`.
fn uffd_syscall(flags: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with flags; returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// A userfaultfd from `/dev/userfaultfd` with `flags`.
fn uffd_device(flags: libc::c_int) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt;
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(USERFAULTFD_DEV)?;
    // SAFETY: USERFAULTFD_IOC_NEW takes the flags by value and returns a
    // new fd or -1.
    let fd = check(unsafe { libc::ioctl(dev.as_raw_fd(), USERFAULTFD_IOC_NEW, flags) })?;
    // SAFETY: fd is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a userfaultfd for user-mode faults: the system call, then
/// `/dev/userfaultfd`; each with `UFFD_USER_MODE_ONLY`, retried without
/// it only where the kernel does not know the flag (EINVAL, before 5.11).
fn open_uffd() -> io::Result<OwnedFd> {
    fn with_fallback(open: fn(libc::c_int) -> io::Result<OwnedFd>) -> io::Result<OwnedFd> {
        let base = libc::O_CLOEXEC | libc::O_NONBLOCK;
        match open(base | UFFD_USER_MODE_ONLY) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => open(base),
            r => r,
        }
    }
    let refused = match with_fallback(uffd_syscall) {
        Ok(fd) => return Ok(fd),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => e,
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "userfaultfd: this kernel has no userfaultfd (CONFIG_USERFAULTFD); build \
                 the program with `sss cc --udsm` to run the DSM without it",
            ))
        }
        Err(e) => return Err(e),
    };
    let dev = match with_fallback(uffd_device) {
        Ok(fd) => return Ok(fd),
        Err(e) => e,
    };
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "userfaultfd refused ({refused}): this kernel does not let this user handle \
             page faults. The DSM asks for user-mode faults only, which Linux >= 5.11 \
             allows every user; before 5.11 it needs the sysctl \
             vm.unprivileged_userfaultfd=1 or CAP_SYS_PTRACE; a container's seccomp \
             filter may forbid the call; {USERFAULTFD_DEV}: {dev}. Programs built with \
             `sss cc --udsm` (UDSM: loads check page presence inline) run without \
             userfaultfd"
        ),
    ))
}

/// A userfaultfd, non-blocking; or none (UDSM: pages are made present by
/// explicit fetches, nothing faults into the DSM).
#[derive(Debug)]
pub struct Uffd {
    fd: Option<OwnedFd>,
    wp: bool,
    sigbus: bool,
}

impl Uffd {
    /// Opens a userfaultfd; `wp` asks for write-protect faults too; with
    /// `sigbus`, a fault raises SIGBUS in the faulting thread instead of
    /// an event (`UFFD_FEATURE_SIGBUS`, Linux >= 4.14): without that
    /// feature, an error.
    pub fn new(wp: bool, sigbus: bool) -> io::Result<Self> {
        let fd = open_uffd()?;
        let mut api = UffdioApi {
            api: UFFD_API,
            features: if wp { FEATURE_PAGEFAULT_FLAG_WP } else { 0 }
                | if sigbus { FEATURE_SIGBUS } else { 0 },
            ioctls: 0,
        };
        // SAFETY: UFFDIO_API reads and writes the struct we pass.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), UFFDIO_API, &mut api) })?;
        Ok(Self {
            fd: Some(fd),
            wp,
            sigbus,
        })
    }

    /// Whether faults raise SIGBUS in the faulting thread (no events).
    pub fn sigbus(&self) -> bool {
        self.sigbus
    }

    /// No userfaultfd at all: registering and waking do nothing, there
    /// are no faults, and copies and write protection are refused.
    pub fn none() -> Self {
        Self {
            fd: None,
            wp: false,
            sigbus: false,
        }
    }

    /// Whether write-protect faults were asked for (and granted).
    pub fn wp(&self) -> bool {
        self.wp
    }

    /// Whether this is [`Uffd::none`].
    pub fn is_none(&self) -> bool {
        self.fd.is_none()
    }

    fn raw(&self) -> io::Result<RawFd> {
        self.fd.as_ref().map(|f| f.as_raw_fd()).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "no userfaultfd (UDSM mode: pages are fetched explicitly)",
            )
        })
    }

    /// Registers `[addr, addr+len)` for missing faults (and write-protect
    /// faults when opened with `wp`).
    pub fn register(&self, addr: usize, len: usize) -> io::Result<()> {
        if self.is_none() {
            // Nothing faults: pages are made present by explicit fetches.
            return Ok(());
        }
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start: addr as u64,
                len: len as u64,
            },
            mode: REGISTER_MODE_MISSING | if self.wp { REGISTER_MODE_WP } else { 0 },
            ioctls: 0,
        };
        // SAFETY: UFFDIO_REGISTER reads/writes the struct we pass.
        check(unsafe { libc::ioctl(self.raw()?, UFFDIO_REGISTER, &mut reg) }).map(|_| ())
    }

    /// Registers `[addr, addr+len)` for write-protect faults only (pages
    /// mapped from a home segment: their missing pages are the kernel's).
    pub fn register_wp(&self, addr: usize, len: usize) -> io::Result<()> {
        let mut reg = UffdioRegister {
            range: UffdioRange {
                start: addr as u64,
                len: len as u64,
            },
            mode: REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: UFFDIO_REGISTER reads/writes the struct we pass.
        check(unsafe { libc::ioctl(self.raw()?, UFFDIO_REGISTER, &mut reg) }).map(|_| ())
    }

    /// Installs `src` (whole pages) at the missing pages from `dst`,
    /// write-protected when `wp`. `Ok(false)`: already present.
    pub fn copy(&self, dst: usize, src: &[u8], wp: bool) -> io::Result<bool> {
        let mut c = UffdioCopy {
            dst: dst as u64,
            src: src.as_ptr() as u64,
            len: src.len() as u64,
            mode: if wp { COPY_MODE_WP } else { 0 },
            copy: 0,
        };
        // SAFETY: the kernel copies src.len() bytes from our live slice
        // into a registered range; it never touches present pages.
        let r = unsafe { libc::ioctl(self.raw()?, UFFDIO_COPY, &mut c) };
        if r == -1 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EEXIST) {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(true)
    }

    /// Wakes threads waiting on faults in the range.
    pub fn wake(&self, addr: usize, len: usize) -> io::Result<()> {
        if self.is_none() {
            // Nobody waits on a fault.
            return Ok(());
        }
        let mut r = UffdioRange {
            start: addr as u64,
            len: len as u64,
        };
        // SAFETY: UFFDIO_WAKE reads the range we pass.
        check(unsafe { libc::ioctl(self.raw()?, UFFDIO_WAKE, &mut r) }).map(|_| ())
    }

    /// Sets (`on`) or clears write protection of present pages; clearing
    /// wakes the threads blocked on them.
    pub fn protect(&self, addr: usize, len: usize, on: bool) -> io::Result<()> {
        let mut w = UffdioWriteprotect {
            range: UffdioRange {
                start: addr as u64,
                len: len as u64,
            },
            mode: if on { WRITEPROTECT_MODE_WP } else { 0 },
        };
        // SAFETY: UFFDIO_WRITEPROTECT reads the struct we pass.
        check(unsafe { libc::ioctl(self.raw()?, UFFDIO_WRITEPROTECT, &mut w) }).map(|_| ())
    }

    /// The next pending fault, if any (non-blocking).
    pub fn next(&self) -> io::Result<Option<Fault>> {
        let fd = self.raw()?;
        loop {
            let mut m = UffdMsg::default();
            let n = std::mem::size_of::<UffdMsg>();
            // SAFETY: reads at most n bytes into our message struct.
            let r = unsafe { libc::read(fd, (&mut m as *mut UffdMsg).cast(), n) };
            if r < 0 {
                let e = io::Error::last_os_error();
                return match e.kind() {
                    io::ErrorKind::WouldBlock => Ok(None),
                    io::ErrorKind::Interrupted => continue,
                    _ => Err(e),
                };
            }
            if r as usize != n || m.event != EVENT_PAGEFAULT {
                // Other events (fork, remap) are not requested; skip.
                continue;
            }
            return Ok(Some(Fault {
                addr: m.address as usize,
                write: m.flags & PAGEFAULT_FLAG_WRITE != 0,
                wp: m.flags & PAGEFAULT_FLAG_WP != 0,
            }));
        }
    }

    /// The descriptor, for poll (-1 for [`Uffd::none`]).
    pub fn fd(&self) -> RawFd {
        self.fd.as_ref().map_or(-1, |f| f.as_raw_fd())
    }
}

/// The presence map of UDSM mode: one byte per heap page, non-zero while
/// the page is present in the view (a fetched copy, or a home page mapped
/// here), which code compiled with `sss cc --udsm` reads inline before
/// every access to the heap. An anonymous `MAP_NORESERVE` mapping (16 MiB
/// for the default 64 GiB heap), backed only where touched. Its bytes are
/// only ever accessed atomically, here and by that code (single-byte
/// loads).
#[derive(Debug)]
pub struct Presence {
    map: Reservation,
    pages: u64,
}

impl Presence {
    /// A map of `pages` pages, all absent.
    pub fn new(pages: u64) -> io::Result<Self> {
        let len = (pages as usize).max(1).next_multiple_of(PAGE);
        Ok(Self {
            map: Reservation::new(len, None)?,
            pages,
        })
    }

    /// The first byte, for compiled code.
    pub fn as_ptr(&self) -> *const u8 {
        self.map.base() as *const u8
    }

    fn byte(&self, page: u64) -> Option<&std::sync::atomic::AtomicU8> {
        if page >= self.pages {
            return None;
        }
        // SAFETY: inside the mapping (checked), which lives as long as
        // `self`; its bytes are only accessed atomically.
        Some(unsafe { &*((self.map.base() + page as usize) as *const std::sync::atomic::AtomicU8) })
    }

    /// Whether `page` is present (a page outside the heap never is).
    pub fn get(&self, page: u64) -> bool {
        self.byte(page)
            .is_some_and(|b| b.load(std::sync::atomic::Ordering::Acquire) != 0)
    }

    /// Marks `page` present (after its bytes are in place) or absent
    /// (before they go).
    pub fn set(&self, page: u64, present: bool) {
        if let Some(b) = self.byte(page) {
            b.store(present as u8, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

/// An eventfd used to stop the fault thread.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new non-blocking eventfd.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; returns a new fd or -1.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: fd is a fresh descriptor we own.
        Ok(Self(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes the eventfd readable.
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64.
        unsafe {
            libc::write(self.0.as_raw_fd(), (&one as *const u64).cast(), 8);
        }
    }

    /// The descriptor, for poll.
    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Waits until one of `fds` is readable (or `timeout_ms` passes);
/// returns which are.
pub fn poll2(a: RawFd, b: RawFd, timeout_ms: i32) -> io::Result<(bool, bool)> {
    let mut p = [
        libc::pollfd {
            fd: a,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: b,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: p is a live array of two pollfds.
    let r = unsafe { libc::poll(p.as_mut_ptr(), 2, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok((false, false));
        }
        return Err(e);
    }
    Ok((p[0].revents != 0, p[1].revents != 0))
}

/// Reads `len` bytes at `addr` of this process's memory into a vector.
/// The DSM calls it on heap pages (a missing page faults and is fetched
/// by the fault thread) and on its own segments.
///
/// # Safety
/// `[addr, addr+len)` lies in one mapping of this process that is
/// readable and stays mapped for the whole call (the heap view or a live
/// segment). Its bytes are plain data: other tasks and the program's own
/// threads may change them concurrently only as a data-race-free program
/// does, so the copy reads no torn value it relies on.
pub unsafe fn copy_out(addr: usize, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    // SAFETY: the caller guarantees the source range is mapped and
    // readable; `v` is a fresh buffer of `len` bytes, so they cannot
    // overlap.
    unsafe { std::ptr::copy_nonoverlapping(addr as *const u8, v.as_mut_ptr(), len) };
    v
}

/// Copies `data` to `addr` of this process's memory. `data` may itself
/// be heap memory, even overlapping the destination (a C caller's
/// `sss_dsm_write` from the heap): the copy is a memmove.
///
/// # Safety
/// `[addr, addr+data.len())` lies in one writable mapping of this process
/// that stays mapped for the whole call (the heap view or a live segment)
/// and holds plain bytes (no Rust object's invariants).
pub unsafe fn copy_in(addr: usize, data: &[u8]) {
    // SAFETY: the caller guarantees the destination is mapped, writable
    // and plain bytes; `copy` allows the ranges to overlap.
    unsafe { std::ptr::copy(data.as_ptr(), addr as *mut u8, data.len()) };
}

/// The 8-byte atomic at `addr`.
///
/// # Safety
/// `addr` is 8-byte aligned, its 8 bytes lie in a mapping of this process
/// that stays mapped for `'a`, and every access to them, local or remote
/// (MBCF atomics), is atomic.
pub unsafe fn word<'a>(addr: usize) -> &'a std::sync::atomic::AtomicU64 {
    debug_assert!(addr % 8 == 0);
    // SAFETY: alignment, lifetime and atomic-only access are the caller's
    // guarantee; AtomicU64 has the layout of a u64.
    unsafe { &*(addr as *const std::sync::atomic::AtomicU64) }
}

/// Stores `value` at `addr`. A missing heap page faults and is fetched
/// first.
///
/// # Safety
/// `addr` is aligned for `T` and valid for a write of `T` (inside the heap
/// view); `T` is plain data, so any bytes there before may be overwritten.
pub unsafe fn store<T: Copy>(addr: *mut T, value: T) {
    // SAFETY: validity and alignment are the caller's guarantee.
    unsafe { addr.write_volatile(value) }
}
