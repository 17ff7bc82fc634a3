//! The heap against requests and messages it must refuse: allocations too
//! large for the heap or for `u64` arithmetic, update and invalidation
//! SIGNALs naming offsets and pages outside the heap, as a buggy or hostile
//! task of the job (or a forged datagram) would send them, and settings
//! out of range in the environment.
//!
//! Like `dsm.rs`, this binary is also the launcher (when [`LAUNCH_ENV`] is
//! set) and the tasks (when [`TASK_ENV`] names a scenario).

use sss_dsm::msg::{encode_invalidation, Unlock, Update, MAX_LOCKS, TAG_COPY, TAG_HOME};
use sss_dsm::{
    Config, Dsm, Error, Placement, Protocol, WriteMode, INVALIDATE_HANDLER, LOCK_HANDLER, PAGE,
    UPDATE_HANDLER,
};
use sss_mbcf::{Options, Task};
use sss_testkit::{check, Launcher, TaskResult};
use std::time::{Duration, Instant};

const LAUNCH_ENV: &str = "SSS_DSM_HOSTILE_LAUNCH";
const TASK_ENV: &str = "SSS_DSM_HOSTILE_TASK";
const LAUNCHER: Launcher = Launcher::new(LAUNCH_ENV);
const HEAP: usize = 1 << 30;

/// Not a test of its own: the launcher when [`LAUNCH_ENV`] is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

/// Not a test of its own: a task of a job when [`TASK_ENV`] is set.
#[test]
fn task_mode() {
    sss_testkit::task_mode(TASK_ENV, |scenario| match scenario {
        "alloc" => alloc_limits(),
        "messages" => bad_messages(),
        "adopt:note" => adopt(WriteMode::Note),
        "adopt:trap" => adopt(WriteMode::Trap),
        "solo" => solo(),
        "foreign-sigbus" => foreign_sigbus(),
        "sent-sigbus" => sent_sigbus(),
        s if s.starts_with("settings:") => bad_setting(&s["settings:".len()..]),
        s if s.starts_with("disagree:") => disagree(&s["disagree:".len()..]),
        _ => Err("unknown scenario".into()),
    });
}

type R = TaskResult;

fn new_dsm(task: &Task, protocol: Protocol) -> Result<Dsm, Error> {
    Dsm::new(
        task,
        Config {
            heap: HEAP,
            protocol,
            ..Config::default()
        },
    )
}

/// Fills `[p, p+len)` with `v` and checks it, through the DSM.
fn fill(dsm: &Dsm, p: *mut u8, len: usize, v: u8) -> R {
    dsm.write(p, &vec![v; len])?;
    expect(dsm, p, len, v)
}

fn expect(dsm: &Dsm, p: *mut u8, len: usize, v: u8) -> R {
    let mut back = vec![0u8; len];
    dsm.read(p, &mut back)?;
    check(back.iter().all(|&b| b == v), "heap bytes changed")
}

/// Requests larger than the heap, or whose page rounding overflows, fail
/// with `OutOfMemory` and take nothing: the next allocation neither
/// overlaps a live block nor finds the heap used up.
fn alloc_limits() -> R {
    let task = Task::init()?;
    let dsm = new_dsm(&task, Protocol::Ulrc)?;
    let huge = [
        usize::MAX,
        0xffff_ffff_ffff_f000,
        usize::MAX - PAGE + 2,
        HEAP + 1,
        HEAP - PAGE + 1,
    ];
    let all = dsm.malloc_all(usize::MAX, Placement::Block);
    check(all.is_err(), "malloc_all(SIZE_MAX) succeeded")?;
    if dsm.rank() == 0 {
        let a = dsm.malloc(PAGE, Placement::Block)?;
        fill(&dsm, a, PAGE, 0xa5)?;
        for len in huge {
            match dsm.malloc(len, Placement::Block) {
                Err(Error::OutOfMemory(_)) => {}
                other => return Err(format!("malloc({len:#x}): {other:?}").into()),
            }
            let ft = dsm.malloc(len, Placement::FirstTouch);
            check(ft.is_err(), "first-touch malloc of a huge size succeeded")?;
        }
        let b = dsm.malloc(PAGE, Placement::Block)?;
        let (a0, b0) = (a as usize, b as usize);
        check(
            b0 >= a0 + PAGE || b0 + PAGE <= a0,
            "new block overlaps a live one",
        )?;
        fill(&dsm, b, PAGE, 0x5a)?;
        expect(&dsm, a, PAGE, 0xa5)?;
        // Nothing leaked to the failed requests: the rest fits exactly.
        dsm.malloc(HEAP - 2 * PAGE, Placement::Block)?;
        match dsm.malloc(1, Placement::Block) {
            Err(Error::OutOfMemory(_)) => {}
            other => return Err(format!("malloc past the end: {other:?}").into()),
        }
        println!("DSM-OK");
    }
    task.barrier()?;
    dsm.finalize()?;
    Ok(())
}

/// Rank 1 sends rank 0 update and invalidation SIGNALs outside the heap
/// (offsets whose end wraps past 2^64 among them: before commit a1ebfe5
/// a TAG_HOME update at `u64::MAX - 15` passed the handler's unchecked
/// bound and was copied 16 bytes before the home segment). Rank 0 drops
/// and counts every one, and its heap and home keep their bytes. So are
/// lock releases that name no lock of the table, a lock homed elsewhere,
/// or carry a view of the wrong length: lock 0 is still free after them.
fn bad_messages() -> R {
    let task = Task::init()?;
    let dsm = new_dsm(&task, Protocol::Update)?;
    let a = dsm.malloc_all(2 * PAGE, Placement::Explicit(0))?;
    if dsm.rank() == 0 {
        fill(&dsm, a, 2 * PAGE, 0x3c)?;
    }
    dsm.barrier()?;
    let heap = dsm.len() as u64;
    let update = |tag, off, len: usize| {
        Update {
            tag,
            writer: 1,
            off,
            data: &vec![0xee; len],
        }
        .encode()
    };
    let updates = [
        update(TAG_HOME, u64::MAX - 15, 16),
        update(TAG_HOME, u64::MAX - 1023, 1024),
        update(TAG_COPY, u64::MAX - 15, 16),
        update(TAG_HOME, heap, 8),
        update(TAG_COPY, heap + PAGE as u64, 8),
        update(TAG_HOME, heap - 8, 16),
        update(TAG_HOME, 0, 0),
        vec![1, 0, 0, 0, 1],
    ];
    let invalidations = [
        encode_invalidation(&[heap / PAGE as u64]),
        encode_invalidation(&[0, u64::MAX]),
        vec![0; 9],
    ];
    let n = dsm.size() as usize;
    let release = |id: u32, ticket: Option<u32>, tasks: usize| {
        Unlock {
            id,
            ticket,
            view: vec![0; tasks],
        }
        .encode()
    };
    let mut releases = vec![
        release(MAX_LOCKS as u32, Some(0), n),
        release(0, Some(0), n + 1),
        release(0, None, 0),
        vec![0; 7],
    ];
    // Lock 1 is homed at rank 1 (two tasks or more).
    if n > 1 {
        releases.push(release(1, Some(0), n));
    }
    let sent = (updates.len() + invalidations.len() + releases.len()) as u64;
    if dsm.rank() == 1 {
        for m in &updates {
            task.signal(0, UPDATE_HANDLER, m, Options::default())?;
        }
        for m in &invalidations {
            task.signal(0, INVALIDATE_HANDLER, m, Options::default())?;
        }
        for m in &releases {
            task.signal(0, LOCK_HANDLER, m, Options::default())?;
        }
    }
    if dsm.rank() == 0 {
        let deadline = Instant::now() + Duration::from_secs(10);
        while dsm.stats().bad_messages < sent && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let got = dsm.stats().bad_messages;
        check(
            got == sent,
            &format!("{got} of {sent} bad messages counted"),
        )?;
    }
    dsm.barrier()?;
    expect(&dsm, a, 2 * PAGE, 0x3c)?;
    check(dsm.stats().updates == 0, "a bad update was applied")?;
    // Lock 0 was not served by any of them: taken and given back in turn.
    for r in 0..n as u32 {
        if dsm.rank() == r {
            dsm.lock(0)?;
            dsm.unlock(0)?;
        }
        dsm.barrier()?;
    }
    if dsm.rank() == 0 {
        println!("DSM-OK");
    }
    dsm.finalize()?;
    Ok(())
}

/// Where the test's "globals" live in every task: an address no test
/// maps otherwise (the test binary's own statics move with ASLR, and
/// adopted memory must be at one address everywhere).
const GLOBALS_AT: usize = 0x2000_0000_0000;

/// Pages of the test's "globals": more than the largest private range.
const GLOBAL_PAGES: usize = 17;

/// [`GLOBAL_PAGES`] anonymous pages at [`GLOBALS_AT`], standing for a
/// program's global variables (never unmapped: adopted memory stays).
fn globals() -> Result<*mut u8, String> {
    // SAFETY: a fresh anonymous mapping; MAP_FIXED_NOREPLACE fails
    // instead of replacing anything.
    #[allow(unsafe_code)]
    let p = unsafe {
        libc::mmap(
            GLOBALS_AT as *mut libc::c_void,
            GLOBAL_PAGES * PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p as usize != GLOBALS_AT {
        return Err(format!(
            "cannot map {GLOBALS_AT:#x}: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(p.cast())
}

fn poke(p: *mut u8, v: u8) {
    // SAFETY: tests pass addresses inside `globals()`, plain bytes that
    // only this thread touches (and the DSM, once adopted).
    #[allow(unsafe_code)]
    unsafe {
        p.write_volatile(v)
    }
}

fn peek(p: *const u8) -> u8 {
    // SAFETY: as in `poke`.
    #[allow(unsafe_code)]
    unsafe {
        p.read_volatile()
    }
}

/// `Dsm::adopt`: refused where the heap cannot trap its stores (note
/// mode without write-protect faults), for misaligned ranges, private
/// ranges outside or too large, the heap itself, and a second time (every
/// task alike, the memory untouched); otherwise, in either write mode,
/// rank 0's bytes reach every task, unnoted writes (the home's too) reach
/// the others at a barrier, the private bytes stay each task's own, and
/// after finalize the memory stays whole.
fn adopt(writes: WriteMode) -> R {
    let task = Task::init()?;
    let me = task.rank();
    let last = task.size() - 1;
    let base = globals()?;
    let len = GLOBAL_PAGES * PAGE;
    let at = |off: usize| base.wrapping_add(off);
    // A small private range and one over 4 KiB across two pages (as
    // libsss's note log).
    let keep = [
        (at(PAGE + 100) as usize, 8),
        (at(4 * PAGE + 2000) as usize, 5000),
    ];
    poke(at(0), if me == 0 { 7 } else { 9 });
    poke(at(PAGE + 100), me as u8 + 1);
    let dsm = Dsm::new(
        &task,
        Config {
            heap: HEAP,
            writes,
            ..Config::default()
        },
    )?;
    let refused = |addr: *mut u8, n: usize, keep: &[(usize, usize)]| -> R {
        // SAFETY: `globals()` (or the heap, which adopt refuses) is
        // mapped plain bytes no other thread touches.
        #[allow(unsafe_code)]
        let r = unsafe { dsm.adopt(addr, n, keep) };
        match r {
            Err(Error::Invalid(_)) => Ok(()),
            other => Err(format!("adopt({addr:?}, {n}) gave {other:?}").into()),
        }
    };
    if !dsm.can_adopt() {
        check(writes == WriteMode::Note, "trap mode cannot adopt")?;
        refused(base, len, &[])?;
        check(peek(at(0)) == if me == 0 { 7 } else { 9 }, "memory changed")?;
        dsm.finalize()?;
        println!("DSM-OK");
        return Ok(());
    }
    refused(at(1), PAGE, &[])?;
    refused(base, len, &[(base as usize + len, 8)])?;
    refused(base, len, &[(base as usize, (64 << 10) + 1)])?;
    refused(dsm.base(), PAGE, &[])?;
    check(peek(at(0)) == if me == 0 { 7 } else { 9 }, "memory changed")?;
    // SAFETY: as above.
    #[allow(unsafe_code)]
    unsafe {
        dsm.adopt(base, len, &keep)?
    };
    refused(base, len, &[])?;
    check(peek(at(0)) == 7, "rank 0's byte did not arrive")?;
    check(peek(at(PAGE + 100)) == me as u8 + 1, "private byte lost")?;
    if me == last {
        poke(at(2 * PAGE + 8), 42);
        poke(at(PAGE + 200), 5);
    }
    dsm.barrier()?;
    check(peek(at(2 * PAGE + 8)) == 42, "a write did not arrive")?;
    check(peek(at(PAGE + 200)) == 5, "a write did not arrive")?;
    check(peek(at(PAGE + 100)) == me as u8 + 1, "private byte lost")?;
    // A note on adopted memory is no note: its stores are trapped (a
    // note would send a private range too).
    let notes = dsm.stats().notes;
    dsm.note_write(at(PAGE + 100), 8)?;
    if task.size() > 1 {
        check(
            dsm.stats().notes == notes,
            "a note on adopted memory was kept",
        )?;
    }
    // Every task writes its own byte of one page (rank 0, the home, too),
    // unnoted in note mode, then again after the others read them.
    for round in 1..=3u8 {
        poke(at(16 + me as usize), round * 10 + me as u8);
        // Private bytes on shared pages: written, never sent.
        poke(at(4 * PAGE + 2000), round + me as u8);
        poke(at(5 * PAGE + 100), round + 2 * me as u8);
        poke(at(5 * PAGE + 3000), 99);
        dsm.barrier()?;
        check(
            peek(at(4 * PAGE + 2000)) == round + me as u8,
            "private range lost",
        )?;
        check(
            peek(at(5 * PAGE + 100)) == round + 2 * me as u8,
            "private range lost",
        )?;
        for r in 0..task.size() as usize {
            let want = round * 10 + r as u8;
            check(
                peek(at(16 + r)) == want,
                &format!("round {round}: byte of task {r}"),
            )?;
        }
        dsm.barrier()?;
    }
    dsm.finalize()?;
    check(peek(at(2 * PAGE + 8)) == 42, "lost at finalize")?;
    check(peek(at(PAGE + 100)) == me as u8 + 1, "private byte lost")?;
    poke(at(2 * PAGE + 16), 1);
    println!("DSM-OK");
    Ok(())
}

/// A task alone in trap mode: stores between 100 lock releases fault
/// once per page, not once per release; a page dropped by a protocol
/// switch takes its stores home first.
fn solo() -> R {
    let task = Task::init()?;
    let dsm = Dsm::new(
        &task,
        Config {
            heap: HEAP,
            writes: WriteMode::Trap,
            ..Config::default()
        },
    )?;
    let p = dsm.malloc(2 * PAGE, Placement::Block)?;
    for i in 0..100u8 {
        dsm.lock(1)?;
        poke(p, i);
        poke(p.wrapping_add(PAGE), i);
        dsm.unlock(1)?;
    }
    // One fault a page, or one for both: its home pages are mapped as
    // one run at the first.
    let faults = dsm.stats().write_faults;
    check(
        (1..=2).contains(&faults),
        &format!("{faults} write faults, want 1 or 2"),
    )?;
    dsm.set_protocol(p, Protocol::HomeOnly)?;
    let mut b = [0u8; 1];
    dsm.read(p.wrapping_add(PAGE), &mut b)?;
    check(b[0] == 99, "a store was lost with its page")?;
    dsm.finalize()?;
    println!("DSM-OK");
    Ok(())
}

/// A SIGBUS that is not a heap fault, with the heap's handler
/// installed: a store past the end of a file mapping. Says DSM-OK
/// first; the store must then end the task by SIGBUS (the action
/// installed before the heap's), not hang or be taken for a heap fault.
fn foreign_sigbus() -> R {
    let task = Task::init()?;
    let dsm = new_dsm(&task, Protocol::Ulrc)?;
    // A heap fault first: the handler is in place and resolves it.
    let p = dsm.malloc(PAGE, Placement::Block)?;
    fill(&dsm, p, PAGE, 5)?;
    // SAFETY: a fresh empty memfd of this process, mapped one page long;
    // the store past its end raises SIGBUS, which is what is tested.
    #[allow(unsafe_code)]
    unsafe {
        let fd = libc::memfd_create(c"sss-sigbus".as_ptr(), libc::MFD_CLOEXEC);
        check(fd >= 0, "memfd_create")?;
        let m = libc::mmap(
            std::ptr::null_mut(),
            PAGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        check(m != libc::MAP_FAILED, "mmap")?;
        println!("DSM-OK before the store");
        use std::io::Write;
        std::io::stdout().flush()?;
        m.cast::<u8>().write_volatile(1);
    }
    Err("a store past the end of a file did not end the task".into())
}

/// A SIGBUS sent to the task (`raise`), with the heap's handler
/// installed over the default action (as in a C program; Rust's runtime
/// installs a handler of its own, which would swallow a sent SIGBUS with
/// or without the heap): the default action ends the task. Swallowed, it
/// would leave the task running without the heap's handler.
fn sent_sigbus() -> R {
    // SAFETY: the default action of SIGBUS, before any heap exists.
    #[allow(unsafe_code)]
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
    let task = Task::init()?;
    let dsm = new_dsm(&task, Protocol::Ulrc)?;
    let p = dsm.malloc(PAGE, Placement::Block)?;
    fill(&dsm, p, PAGE, 5)?;
    println!("DSM-OK before the signal");
    use std::io::Write;
    std::io::stdout().flush()?;
    // SAFETY: sends this thread a signal; that is what is tested.
    #[allow(unsafe_code)]
    unsafe {
        libc::raise(libc::SIGBUS);
    }
    Err("a signal 7 sent to the task did not end it".into())
}

/// `Dsm::from_env` under a bad value of `var` (set by the test) fails
/// before any collective step, with an error naming `var`.
fn bad_setting(var: &str) -> R {
    let task = Task::init()?;
    match Dsm::from_env(&task) {
        Err(e) if e.to_string().contains(var) => {
            println!("DSM-OK {e}");
            Ok(())
        }
        Err(e) => Err(format!("error does not name {var}: {e}").into()),
        Ok(_) => Err(format!("a bad {var} was accepted").into()),
    }
}

/// One task fails a step of `Dsm::new` that the others pass (`kind`:
/// `trap-udsm`, a configuration it refuses itself; `fds`, no file
/// descriptor left for its userfaultfd) or asks for another protocol
/// (`protocol`). Every task must return an error naming what happened,
/// and the job must then make a heap that works.
fn disagree(kind: &str) -> R {
    let task = Task::init()?;
    let odd = task.rank() == 1;
    let mut cfg = Config {
        heap: HEAP,
        ..Config::default()
    };
    let mut limit = None;
    match kind {
        "trap-udsm" if odd => {
            cfg.writes = WriteMode::Trap;
            cfg.userfaultfd = false;
        }
        "protocol" if odd => cfg.protocol = Protocol::Invalidate,
        "fds" if odd => limit = Some(no_more_fds()?),
        "trap-udsm" | "protocol" | "fds" => {}
        _ => return Err("unknown kind".into()),
    }
    let r = Dsm::new(&task, cfg);
    if let Some(old) = limit {
        set_fd_limit(old)?;
    }
    let e = match r {
        Ok(_) => return Err(format!("task {} made its heap", task.rank()).into()),
        Err(e) => e,
    };
    let text = e.to_string();
    let want = match (kind, odd) {
        ("trap-udsm", true) => matches!(e, Error::Invalid(_)),
        ("fds", true) => matches!(e, Error::Io(_)),
        ("trap-udsm", false) => {
            matches!(e, Error::PeerFailed(_)) && text.contains("task 1") && text.contains("trap")
        }
        ("fds", false) => {
            matches!(e, Error::PeerFailed(_))
                && text.contains("task 1 could not open its userfaultfd")
        }
        _ => matches!(e, Error::Mismatch(_)) && text.contains("invalidate"),
    };
    check(
        want,
        &format!("task {}: unexpected error: {e:?}", task.rank()),
    )?;
    println!("task {}: {text}", task.rank());
    // Nothing is left behind: the job makes a heap and uses it.
    let dsm = new_dsm(&task, Protocol::Ulrc)?;
    let p = dsm.malloc_all(PAGE, Placement::Explicit(0))?;
    if task.rank() == 1 {
        fill(&dsm, p, 64, 9)?;
    }
    dsm.barrier()?;
    expect(&dsm, p, 64, if task.size() > 1 { 9 } else { 0 })?;
    dsm.finalize()?;
    println!("DSM-OK");
    Ok(())
}

/// Lowers this process's open-file limit to the descriptors it holds, so
/// that the next one it opens fails; returns the limit to restore.
fn no_more_fds() -> Result<libc::rlimit, Box<dyn std::error::Error>> {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given; dup/close act on
    // descriptors of this process only.
    #[allow(unsafe_code)]
    let next = unsafe {
        check(
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut old) == 0,
            "getrlimit",
        )?;
        let fd = libc::dup(0);
        check(fd >= 0, "dup")?;
        libc::close(fd);
        fd
    };
    set_fd_limit(libc::rlimit {
        rlim_cur: next as libc::rlim_t,
        rlim_max: old.rlim_max,
    })?;
    Ok(old)
}

fn set_fd_limit(l: libc::rlimit) -> R {
    // SAFETY: setrlimit reads the struct it is given.
    #[allow(unsafe_code)]
    let r = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &l) };
    check(r == 0, "setrlimit")
}

fn launch(placement: &[&str], scenario: &str) -> (Option<i32>, String, String) {
    launch_with(placement, scenario, &[])
}

fn launch_with(
    placement: &[&str],
    scenario: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    LAUNCHER.run_self(placement, TASK_ENV, scenario, env)
}

fn is_part() -> bool {
    std::env::var(TASK_ENV).is_ok() || std::env::var(LAUNCH_ENV).is_ok()
}

fn run_on(scenario: &str, placements: &[&[&str]]) {
    for p in placements {
        let (code, out, err) = launch(p, scenario);
        assert!(
            code == Some(0) && out.contains("DSM-OK"),
            "{scenario} with {p:?}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

/// Regression (issue 12): `malloc(SIZE_MAX)` succeeded (the page rounding
/// wrapped to 0 bytes) and `malloc(0xfffffffffffff000)` wrapped the bump
/// pointer, so the next allocation overlapped a live block.
#[test]
fn huge_allocations_fail_and_the_heap_stays_usable() {
    if is_part() {
        return;
    }
    run_on(
        "alloc",
        &[&["-n", "1"], &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"]],
    );
}

/// Regression (commit a1ebfe5 and issue 12): update and invalidation
/// messages outside the heap, and malformed lock releases, are dropped
/// and counted, over shm and udp.
#[test]
fn messages_outside_the_heap_are_dropped_and_counted() {
    if is_part() {
        return;
    }
    run_on(
        "messages",
        &[&["-n", "2"], &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"]],
    );
}

/// A program's globals adopted as shared memory (issue 17): arguments it
/// must refuse, and the bytes that must and must not move.
#[test]
fn adopted_globals_are_shared_and_bad_arguments_refused() {
    if is_part() {
        return;
    }
    run_on(
        "adopt:note",
        &[
            &["-n", "1"],
            &["-n", "2"],
            &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"],
        ],
    );
    run_on(
        "adopt:trap",
        &[
            &["-n", "1"],
            &["-n", "2"],
            &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"],
        ],
    );
}

/// Regression (issue 17, Radiosity): a task alone in trap mode paid a
/// write-protect fault for every page it wrote after each release.
/// A SIGBUS that is no heap fault, from an access or sent, goes to the
/// action installed before the heap's handler (here the default: the
/// task ends by SIGBUS) rather than being retried as a heap fault for
/// ever or swallowed.
#[test]
fn a_sigbus_outside_the_heap_keeps_its_default_action() {
    if is_part() {
        return;
    }
    for scenario in ["foreign-sigbus", "sent-sigbus"] {
        let (code, out, err) = launch(&["-n", "1"], scenario);
        assert!(
            code != Some(0) && out.contains("DSM-OK") && err.contains("killed by signal 7"),
            "{scenario}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

#[test]
fn a_task_alone_in_trap_mode_faults_once_per_page() {
    if is_part() {
        return;
    }
    run_on("solo", &[&["-n", "1"]]);
}

/// Regression (issue 12, item 6, for the DSM): settings out of range were
/// ignored or clamped (`SSS_DSM_PROTOCOL=lrc` ran ulrc, `SSS_DSM_PREFETCH=999`
/// ran 256); each kind is now an initialization error naming its variable.
#[test]
fn bad_settings_fail_initialization_naming_the_variable() {
    if is_part() {
        return;
    }
    for (var, value) in [
        ("SSS_DSM_HEAP", "1T"),
        ("SSS_DSM_PROTOCOL", "lrc"),
        ("SSS_DSM_WRITES", "both"),
        ("SSS_DSM_PREFETCH", "999"),
        ("SSS_DSM_FAULT_NO_WAKEUPS", "yes"),
        ("SSS_DSM_FAULTS", "sigbus"),
        ("SSS_STATS", "yaml"),
    ] {
        let scenario = format!("settings:{var}");
        let (code, out, err) = launch_with(&["-n", "1"], &scenario, &[(var, value)]);
        assert!(
            code == Some(0) && out.contains("DSM-OK"),
            "{var}={value}: exit {code:?}\nstdout:\n{out}\nstderr:\n{err}"
        );
    }
}

/// Regression: a task that failed a step of the heap's creation alone (a
/// setting it refuses, no descriptor for its userfaultfd) returned while
/// the others waited for it in the next collective step until the job's
/// timeout; tasks asking for different protocols made their heaps and
/// ran on, inconsistent. Now every task returns an error naming the task
/// and what it could not do, and the job can make its heap afterwards.
#[test]
fn a_task_failing_to_create_the_heap_fails_it_everywhere() {
    if is_part() {
        return;
    }
    for kind in ["trap-udsm", "protocol", "fds"] {
        run_on(
            &format!("disagree:{kind}"),
            &[&["-n", "2"], &["-n", "3", "--hosts", "127.0.0.2,127.0.0.3"]],
        );
    }
}
