//! The C ABI from C: builds `libsss` (shared and static), compiles the
//! header from C and C++, compiles the C examples with `cc` (flags from a
//! generated `sss.pc` through `pkg-config` when it is installed, explicit
//! ones otherwise) and runs them through the launcher with 2 and 4 tasks,
//! on one node (`shm`) and on the two "nodes" 127.0.0.2 and 127.0.0.3
//! (`udp` between them).
//!
//! The launcher is `sss_launch::run`, reached by re-executing this test
//! binary with [`LAUNCH_ENV`] set (see [`launcher_mode`]), so its output
//! can be captured and no separately built binary is needed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;
use tempfile::TempDir;

/// Set (to the launcher's arguments, separated by 0x1f) when this binary
/// is re-executed as the launcher.
const LAUNCH_ENV: &str = "SSS_CAPI_TEST_LAUNCH";
/// Every job: the launcher's `--timeout` of 20 s, and a hard limit of
/// 25 s that only catches a hung launcher. Jobs take a second or two; a
/// test stops at its first failed job, so it stays under a minute.
const LAUNCHER: Launcher = Launcher::new(LAUNCH_ENV);

/// Where a job's tasks run.
const PLACEMENTS: &[(&str, &[&str])] = &[
    ("2 tasks, one node", &["-n", "2"]),
    ("4 tasks, one node", &["-n", "4"]),
    (
        "2 tasks, two nodes",
        &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
    (
        "4 tasks, two nodes",
        &["-n", "4", "--hosts", "127.0.0.2,127.0.0.3"],
    ),
];

use sss_testkit::cc::run_ok as run;
use sss_testkit::{lib_dir, root, Launcher};

/// Not a test of its own: when [`LAUNCH_ENV`] is set, this process is the
/// launcher of a job (`sss run` with the arguments from the variable) and
/// exits with its status. Without the variable it does nothing.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A scratch directory with a concrete `sss.pc` and the compile flags.
struct Build {
    dir: TempDir,
    /// Flags for the shared library, from pkg-config if present.
    cflags: Vec<String>,
    libs: Vec<String>,
    /// Libraries libsss.a needs (its `Libs.private`).
    static_libs: Vec<String>,
}

impl Build {
    fn new() -> Build {
        let lib = lib_dir();
        let dir = tempfile::Builder::new()
            .prefix("sss-capi-")
            .tempdir()
            .expect("temp dir");
        let include = root().join("include");
        let pc = std::fs::read_to_string(root().join("crates/capi/sss.pc.in"))
            .expect("sss.pc.in")
            .replace("@PREFIX@", &dir.path().display().to_string())
            .replace("@LIBDIR@", &lib.display().to_string())
            .replace("@INCLUDEDIR@", &include.display().to_string())
            .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
        std::fs::write(dir.path().join("sss.pc"), pc).expect("write sss.pc");
        let split = |s: String| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let rpath = format!("-Wl,-rpath,{}", lib.display());
        let (cflags, mut libs, static_libs) = if have("pkg-config") {
            let pkg = |args: &[&str]| {
                split(run(Command::new("pkg-config")
                    .args(args)
                    .arg("sss")
                    .env("PKG_CONFIG_PATH", dir.path())))
            };
            let static_libs = pkg(&["--static", "--libs-only-l"])
                .into_iter()
                .filter(|l| l != "-lsss")
                .collect();
            (pkg(&["--cflags"]), pkg(&["--libs"]), static_libs)
        } else {
            eprintln!("pkg-config not installed: explicit compiler flags");
            (
                vec![format!("-I{}", include.display())],
                vec![format!("-L{}", lib.display()), "-lsss".into()],
                split("-lpthread -ldl -lm -lrt -lutil -lgcc_s -lc".into()),
            )
        };
        libs.push(rpath);
        Build {
            dir,
            cflags,
            libs,
            static_libs,
        }
    }

    /// Compiles C (or C++) `src` into an executable; `static_lib` links
    /// libsss.a instead of libsss.so.
    fn compile(&self, compiler: &str, std_flags: &[&str], src: &Path, static_lib: bool) -> PathBuf {
        let name = src.file_stem().unwrap().to_string_lossy().into_owned();
        let exe = self.dir.path().join(if static_lib {
            format!("{name}-static")
        } else {
            name
        });
        let mut cmd = Command::new(compiler);
        cmd.args(std_flags)
            .args(["-O1", "-g", "-Wall", "-Wextra", "-Werror"])
            .args(&self.cflags)
            .arg("-o")
            .arg(&exe)
            .arg(src);
        if static_lib {
            cmd.arg(lib_dir().join("libsss.a")).args(&self.static_libs);
        } else {
            cmd.args(&self.libs);
        }
        run(&mut cmd);
        exe
    }

    /// Compiles an example of `examples/c` (ISO C11, pedantic).
    fn example(&self, name: &str, static_lib: bool) -> PathBuf {
        let src = root().join("examples/c").join(format!("{name}.c"));
        self.compile("cc", &["-std=c11", "-pedantic"], &src, static_lib)
    }

    /// Compiles a test program of `tests/c`.
    fn test_program(&self, file: &str, std_flags: &[&str]) -> PathBuf {
        let src = root().join("crates/capi/tests/c").join(file);
        let compiler = if file.ends_with(".cpp") { "c++" } else { "cc" };
        self.compile(compiler, std_flags, &src, false)
    }
}

/// What a launched job printed and how it ended.
struct Job {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Job {
    /// Lines of task output starting with `prefix` (the test harness may
    /// have printed on the same line before the launcher took over).
    fn lines_starting(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .filter_map(|l| l.find(prefix).map(|i| &l[i..]))
            .collect()
    }
}

/// Runs `program args` through the launcher with `placement`.
fn launch(placement: &[&str], program: &Path, args: &[&str]) -> Job {
    let (code, out, err) = LAUNCHER.run(placement, program, args, &[]);
    Job {
        code,
        stdout: out,
        stderr: err,
    }
}

/// Runs `exe args` in every placement and checks that rank 0 printed
/// exactly one line `expect(tasks)`.
fn run_everywhere(exe: &Path, args: &[&str], prefix: &str, expect: impl Fn(u32) -> String) {
    for (what, placement) in PLACEMENTS {
        let tasks: u32 = placement[1].parse().unwrap();
        let start = Instant::now();
        let job = launch(placement, exe, args);
        let lines = job.lines_starting(prefix);
        let ok = job.code == Some(0) && lines.len() == 1 && lines[0].starts_with(&expect(tasks));
        assert!(
            ok,
            "{} with {what}: exit {:?}, expected a line starting {:?}\nstdout:\n{}\nstderr:\n{}",
            exe.display(),
            job.code,
            expect(tasks),
            job.stdout,
            job.stderr
        );
        eprintln!(
            "{what}: {} ({:.1} s)",
            lines[0],
            start.elapsed().as_secs_f64()
        );
    }
}

#[test]
fn pingpong_example() {
    let b = Build::new();
    let exe = b.example("pingpong", false);
    run_everywhere(&exe, &["300"], "pingpong:", |_| {
        "pingpong: 300 rounds of 8 B between 2 tasks, round trip ".into()
    });
    // Messages larger than one packet.
    let job = launch(PLACEMENTS[2].1, &exe, &["20", "5000"]);
    assert_eq!(job.code, Some(0), "{}{}", job.stdout, job.stderr);
    assert_eq!(job.lines_starting("pingpong: 20 rounds of 5000 B").len(), 1);
}

#[test]
fn counter_example() {
    let b = Build::new();
    let exe = b.example("counter", false);
    run_everywhere(&exe, &["300"], "counter:", |n| {
        format!("counter: {n} tasks x 300 adds = {}", n * 300)
    });
}

#[test]
fn fifo_example() {
    let b = Build::new();
    let exe = b.example("fifo", false);
    run_everywhere(&exe, &["150"], "fifo:", |n| {
        format!(
            "fifo: {} senders x 150 messages, each sender in order",
            n - 1
        )
    });
}

#[test]
fn signal_example() {
    let b = Build::new();
    let exe = b.example("signal", false);
    run_everywhere(&exe, &["100"], "signal:", |n| {
        format!("signal: {} peers x 100 rounds, all replies correct", n - 1)
    });
}

#[test]
fn static_library() {
    let b = Build::new();
    let exe = b.example("counter", true);
    let ldd = Command::new("ldd").arg(&exe).output();
    if let Ok(out) = ldd {
        let deps = String::from_utf8_lossy(&out.stdout);
        assert!(!deps.contains("libsss"), "linked dynamically:\n{deps}");
    }
    for (_, placement) in [PLACEMENTS[1], PLACEMENTS[2]] {
        let job = launch(placement, &exe, &["100"]);
        assert_eq!(job.code, Some(0), "{}{}", job.stdout, job.stderr);
        let n: u32 = placement[1].parse().unwrap();
        let want = format!("counter: {n} tasks x 100 adds = {}", n * 100);
        assert_eq!(job.lines_starting(&want).len(), 1, "{}", job.stdout);
    }
}

#[test]
fn multicast_to_all_tasks() {
    let b = Build::new();
    let exe = b.test_program("multicast.c", &["-std=c11", "-pedantic"]);
    for (_, placement) in [PLACEMENTS[1], PLACEMENTS[3]] {
        let job = launch(placement, &exe, &[]);
        let want = format!("multicast: {} members all received the block", placement[1]);
        assert!(
            job.code == Some(0) && job.lines_starting(&want).len() == 1,
            "exit {:?}\n{}{}",
            job.code,
            job.stdout,
            job.stderr
        );
    }
}

/// Every operation and error status on one task, without the launcher:
/// a job of one.
#[test]
fn api_behaviour_single_task() {
    let b = Build::new();
    let exe = b.test_program("api.c", &["-std=gnu11"]);
    for transport in ["auto", "udp"] {
        let out = Command::new(&exe)
            .env("SSS_TRANSPORT", transport)
            .env_remove("SSS_RANK")
            .output()
            .expect("run api");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.starts_with("api: all "),
            "SSS_TRANSPORT={transport}: {}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The masked structs grow without breaking callers: a caller with an
/// older, shorter struct (ending at an inaccessible page) is neither read
/// nor written past the fields its mask names, unset fields are left
/// alone, and unknown bits are refused (`tests/c/field_mask.c`).
#[test]
fn field_masks_keep_old_callers_working() {
    let b = Build::new();
    let exe = b.test_program("field_mask.c", &["-std=c11", "-pedantic"]);
    // Through the launcher, which removes the task's shared memory even
    // when a regression crashes it.
    let job = launch(&["-n", "1"], &exe, &[]);
    assert!(
        job.code == Some(0) && job.lines_starting("field_mask: all ").len() == 1,
        "exit {:?}\n{}{}",
        job.code,
        job.stdout,
        job.stderr
    );
}

/// The header compiles warning-free as ISO C (c99, c11) and C++, and what
/// a C compiler makes of it matches the library.
#[test]
fn header_matches_library() {
    use sss::status::Status;
    use sss::types::{DsmStats, Masked, NodeInfo, OpParams, RAddr, SegInfo, Stats};
    use std::mem::{offset_of, size_of};

    let b = Build::new();
    for std in ["-std=c99", "-std=c11"] {
        let exe = b.test_program("layout.c", &[std, "-pedantic"]);
        let printed = run(&mut Command::new(&exe));
        let mut want = vec![
            format!("size sss_seg_info_t {}", size_of::<SegInfo>()),
            format!("offset sss_seg_info_t.rank {}", offset_of!(SegInfo, rank)),
            format!("offset sss_seg_info_t.perm {}", offset_of!(SegInfo, perm)),
            format!("offset sss_seg_info_t.key {}", offset_of!(SegInfo, key)),
            format!("offset sss_seg_info_t.base {}", offset_of!(SegInfo, base)),
            format!("offset sss_seg_info_t.len {}", offset_of!(SegInfo, len)),
            format!("size sss_raddr_t {}", size_of::<RAddr>()),
            format!("offset sss_raddr_t.rank {}", offset_of!(RAddr, rank)),
            format!("offset sss_raddr_t.key {}", offset_of!(RAddr, key)),
            format!("offset sss_raddr_t.addr {}", offset_of!(RAddr, addr)),
            format!("size sss_op_params_t {}", size_of::<OpParams>()),
            format!(
                "offset sss_op_params_t.field_mask {}",
                offset_of!(OpParams, field_mask)
            ),
            format!(
                "offset sss_op_params_t.flags {}",
                offset_of!(OpParams, flags)
            ),
            format!(
                "offset sss_op_params_t.notify_key {}",
                offset_of!(OpParams, notify_key)
            ),
            format!(
                "offset sss_op_params_t.notify_addr {}",
                offset_of!(OpParams, notify_addr)
            ),
            format!(
                "offset sss_op_params_t.notify_addend {}",
                offset_of!(OpParams, notify_addend)
            ),
            format!(
                "offset sss_op_params_t.counter {}",
                offset_of!(OpParams, counter)
            ),
            format!("size sss_stats_t {}", size_of::<Stats>()),
            format!(
                "offset sss_stats_t.field_mask {}",
                offset_of!(Stats, field_mask)
            ),
            format!(
                "offset sss_stats_t.retransmissions {}",
                offset_of!(Stats, retransmissions)
            ),
            format!(
                "offset sss_stats_t.bad_packets {}",
                offset_of!(Stats, bad_packets)
            ),
            format!("offset sss_stats_t.refused {}", offset_of!(Stats, refused)),
            format!("size sss_node_info_t {}", size_of::<NodeInfo>()),
            format!(
                "offset sss_node_info_t.field_mask {}",
                offset_of!(NodeInfo, field_mask)
            ),
            format!("offset sss_node_info_t.up {}", offset_of!(NodeInfo, up)),
            format!(
                "offset sss_node_info_t.mem_total_kb {}",
                offset_of!(NodeInfo, mem_total_kb)
            ),
            format!(
                "offset sss_node_info_t.updated_ns {}",
                offset_of!(NodeInfo, updated_ns)
            ),
            format!("size sss_dsm_stats_t {}", size_of::<DsmStats>()),
            format!(
                "offset sss_dsm_stats_t.field_mask {}",
                offset_of!(DsmStats, field_mask)
            ),
            format!(
                "offset sss_dsm_stats_t.updates {}",
                offset_of!(DsmStats, updates)
            ),
        ];
        // The header's field_mask bits name the fields the library's
        // tables do, bit for bit.
        fn bits<T: Masked>(name: &str, want: &mut Vec<String>) {
            for (i, f) in T::FIELDS.iter().enumerate() {
                want.push(format!("bit {name} {i} {}", f.offset));
            }
            want.push(format!("all {name} {}", T::ALL));
        }
        bits::<OpParams>("sss_op_params_t", &mut want);
        bits::<Stats>("sss_stats_t", &mut want);
        bits::<NodeInfo>("sss_node_info_t", &mut want);
        bits::<DsmStats>("sss_dsm_stats_t", &mut want);
        want.extend([
            format!("size sss_status_t {}", size_of::<Status>()),
            format!(
                "flags {} {} {}",
                sss::types::OP_FLAG_STATUS_RETURN,
                sss::types::OP_FLAG_NOFC,
                sss::types::OP_FLAG_NOTIFY
            ),
            "perm 1 2 4 7".into(),
            "cmp 0 1 2 3 4 5".into(),
        ]);
        for s in Status::ALL {
            want.push(format!(
                "status {} {} {}",
                s.name(),
                s as i32,
                s.message().to_str().unwrap()
            ));
        }
        let got: Vec<&str> = printed.lines().collect();
        assert_eq!(got, want, "{std}");
    }
    for std in ["-std=c++11", "-std=c++17"] {
        let exe = b.test_program("header.cpp", &[std, "-pedantic"]);
        let out = run(Command::new(&exe).env_remove("SSS_RANK"));
        assert!(out.starts_with("c++: ok, libsss "), "{out}");
    }
}

/// Every function and variable the header declares is exported by
/// libsss.so, and nothing else named `sss_*` is.
#[test]
fn exports_match_header() {
    let header = std::fs::read_to_string(root().join("include/sss.h")).expect("sss.h");
    let mut declared = BTreeSet::new();
    for line in header.lines() {
        let l = line.trim_start();
        let starts_decl = l.starts_with(|c: char| c.is_ascii_lowercase())
            && !l.starts_with("static")
            && !l.starts_with("typedef");
        if !starts_decl || !line.starts_with(l) {
            continue;
        }
        for (i, _) in l.match_indices("sss_") {
            let name: String = l[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let rest = &l[i + name.len()..];
            // Functions, and the data the RCOP pass reads (`extern … sss_x;`).
            if rest.starts_with('(') || (l.starts_with("extern ") && rest.starts_with(';')) {
                declared.insert(name);
                break;
            }
        }
    }
    let nm = run(Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libsss.so")));
    let exported: BTreeSet<String> = nm
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("sss_"))
        .map(String::from)
        .collect();
    assert!(declared.len() > 40, "parsed only {declared:?}");
    assert_eq!(declared, exported);
}

/// `examples/c/Makefile` builds every example with pkg-config (when
/// pkg-config and make are installed), out of tree, including the static
/// one.
#[test]
fn makefile_with_pkg_config() {
    if !have("pkg-config") || !have("make") {
        eprintln!("skipped: needs pkg-config and make");
        return;
    }
    let b = Build::new();
    let out = b.dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    run(Command::new("make")
        .arg("-f")
        .arg(root().join("examples/c/Makefile"))
        .arg(format!("O={}", out.display()))
        .arg(format!("LDFLAGS=-Wl,-rpath,{}", lib_dir().display()))
        .env("PKG_CONFIG_PATH", b.dir.path())
        .current_dir(b.dir.path()));
    for p in ["pingpong", "counter", "fifo", "signal", "counter-static"] {
        assert!(out.join(p).is_file(), "{p} not built");
    }
    let job = launch(PLACEMENTS[0].1, &out.join("fifo"), &["20"]);
    assert_eq!(job.code, Some(0), "{}{}", job.stdout, job.stderr);
}
