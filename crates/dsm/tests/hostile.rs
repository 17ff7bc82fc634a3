//! The heap against requests and messages it must refuse: allocations too
//! large for the heap or for `u64` arithmetic, update and invalidation
//! SIGNALs naming offsets and pages outside the heap, as a buggy or hostile
//! task of the job (or a forged datagram) would send them, and settings
//! out of range in the environment.
//!
//! Like `dsm.rs`, this binary is also the launcher (when [`LAUNCH_ENV`] is
//! set) and the tasks (when [`TASK_ENV`] names a scenario).

use clap::Parser;
use sss_dsm::msg::{encode_invalidation, Update, TAG_COPY, TAG_HOME};
use sss_dsm::{Config, Dsm, Error, Placement, Protocol, INVALIDATE_HANDLER, PAGE, UPDATE_HANDLER};
use sss_mbcf::{Options, Task};
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const LAUNCH_ENV: &str = "SSS_DSM_HOSTILE_LAUNCH";
const TASK_ENV: &str = "SSS_DSM_HOSTILE_TASK";
const JOB_LIMIT: Duration = Duration::from_secs(25);
const HEAP: usize = 1 << 30;

#[derive(Parser)]
struct LauncherCli {
    #[command(flatten)]
    run: sss_launch::RunArgs,
}

/// Not a test of its own: the launcher when [`LAUNCH_ENV`] is set.
#[test]
fn launcher_mode() {
    let Ok(args) = std::env::var(LAUNCH_ENV) else {
        return;
    };
    let argv = std::iter::once("sss-run".to_string()).chain(args.split('\x1f').map(String::from));
    let code = match LauncherCli::try_parse_from(argv) {
        Ok(cli) => sss_launch::run(cli.run),
        Err(e) => {
            eprintln!("{e}");
            2
        }
    };
    std::process::exit(code);
}

/// Not a test of its own: a task of a job when [`TASK_ENV`] is set.
#[test]
fn task_mode() {
    let Ok(scenario) = std::env::var(TASK_ENV) else {
        return;
    };
    let r = match scenario.as_str() {
        "alloc" => alloc_limits(),
        "messages" => bad_messages(),
        s if s.starts_with("settings:") => bad_setting(&s["settings:".len()..]),
        _ => Err("unknown scenario".into()),
    };
    let code = match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("task failed: {e}");
            1
        }
    };
    std::process::exit(code);
}

type R = Result<(), Box<dyn std::error::Error>>;

fn check(cond: bool, what: &str) -> R {
    if cond {
        Ok(())
    } else {
        Err(what.to_string().into())
    }
}

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
/// and counts every one, and its heap and home keep their bytes.
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
    let sent = (updates.len() + invalidations.len()) as u64;
    if dsm.rank() == 1 {
        for m in &updates {
            task.signal(0, UPDATE_HANDLER, m, Options::default())?;
        }
        for m in &invalidations {
            task.signal(0, INVALIDATE_HANDLER, m, Options::default())?;
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
    dsm.barrier()?;
    if dsm.rank() == 0 {
        println!("DSM-OK");
    }
    dsm.finalize()?;
    Ok(())
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

fn launch(placement: &[&str], scenario: &str) -> (Option<i32>, String, String) {
    launch_with(placement, scenario, &[])
}

fn launch_with(
    placement: &[&str],
    scenario: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let exe = std::env::current_exe().expect("current_exe");
    let mut largs: Vec<String> = placement.iter().map(|s| s.to_string()).collect();
    largs.extend(["--timeout".into(), "20".into()]);
    largs.push(exe.display().to_string());
    largs.extend(
        [
            "task_mode",
            "--exact",
            "--nocapture",
            "-q",
            "--test-threads=1",
        ]
        .map(String::from),
    );
    let mut child = Command::new(&exe)
        .args([
            "launcher_mode",
            "--exact",
            "--nocapture",
            "-q",
            "--test-threads=1",
        ])
        .env(LAUNCH_ENV, largs.join("\x1f"))
        .env(TASK_ENV, scenario)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the launcher");
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let deadline = Instant::now() + JOB_LIMIT;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (
        status.and_then(|s| s.code()),
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    )
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
/// messages outside the heap are dropped and counted, over shm and udp.
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
