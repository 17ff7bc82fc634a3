//! The `sss sim` command line: clear errors, and a tiny run that writes output.

use std::process::Command;

fn sss() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sss"))
}

#[test]
fn bad_arguments_fail_with_a_message() {
    let out = sss()
        .args(["sim", "--network", "w999"])
        .output()
        .expect("spawn sss");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("w488 or w4444"), "{err}");

    let out = sss()
        .args(["sim", "--grid", "reduced", "--set", "M", "--quiet"])
        .output()
        .expect("spawn sss");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("select no run"));
}

#[test]
fn small_run_writes_tables_and_plots() {
    let dir = std::env::temp_dir().join(format!("sss-sim-cli-{}", std::process::id()));
    let out = sss()
        .args([
            "sim",
            "--grid",
            "reduced",
            "--set",
            "A",
            "--algo",
            "algo4",
            "--replacement",
            "1",
            "--max-slices",
            "2",
            "--quiet",
            "--out",
        ])
        .arg(&dir)
        .output()
        .expect("spawn sss");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| algo4 |"), "{stdout}");
    assert!(stdout.contains("clocks/s"), "{stdout}");
    for f in [
        "results.json",
        "results.md",
        "fig4_set_a.svg",
        "fig7_free_market.svg",
    ] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Between jobs, with no daemon for the node asked about, `sss status`
/// shows the node itself from /proc instead of failing.
#[test]
fn status_without_a_daemon_reports_the_node_from_proc() {
    let node = "127.0.0.77";
    let out = sss()
        .args(["status", "--node", node])
        .output()
        .expect("spawn sss");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("No node daemon serves {node}")),
        "{text}"
    );
    assert!(text.contains(&format!("| {node} | up |")), "{text}");
    let cpus = std::thread::available_parallelism().unwrap().get();
    assert!(text.contains(&format!("| {cpus} |")), "{text}");
}

/// `sss info` lists every setting with its source, and refuses a
/// misspelt value or name, naming it and what was meant.
#[test]
fn info_lists_settings_and_refuses_bad_ones() {
    let clean = || {
        let mut c = sss();
        for (k, _) in std::env::vars() {
            if k.starts_with("SSS_") {
                c.env_remove(k);
            }
        }
        c
    };
    let out = clean()
        .args(["info"])
        .env("SSS_SECURITY", "encrypt")
        .output()
        .expect("spawn sss");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("| `SSS_SECURITY` | `encrypt` | environment |"),
        "{text}"
    );
    assert!(
        text.contains("| `SSS_DSM_PROTOCOL` | ulrc | default |"),
        "{text}"
    );

    let out = clean()
        .args(["info"])
        .env("SSS_DSM_PROTOCOL", "invalidat")
        .env("SSS_SPINUS", "3")
        .env("SSS_JOB_SECRET", "ab".repeat(32))
        .output()
        .expect("spawn sss");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(
        text.contains("SSS_DSM_PROTOCOL=\"invalidat\" is not valid"),
        "{text}"
    );
    assert!(
        text.contains("SSS_SPINUS is not a setting; did you mean SSS_SPIN_US?"),
        "{text}"
    );
    assert!(!text.contains("abab"), "a secret was printed");
}

/// `sss top` draws in a pseudo-terminal and quits on `q`.
#[test]
fn top_draws_in_a_terminal_and_quits_on_q() {
    use std::io::Write;
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: util-linux script (a pseudo-terminal) not found");
        return;
    }
    let exe = env!("CARGO_BIN_EXE_sss");
    let mut child = Command::new("script")
        .args(["-qec"])
        .arg(format!(
            "stty cols 120 rows 30; {exe} top --node 127.0.0.78 --interval-ms 100"
        ))
        .arg("/dev/null")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn script");
    std::thread::sleep(std::time::Duration::from_millis(700));
    child.stdin.as_mut().unwrap().write_all(b"q").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("sss top did not quit on q");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut out).unwrap();
    assert!(status.success(), "{out}");
    assert!(out.contains("SSS top"), "{out}");
    assert!(out.contains("127.0.0.78 from /proc"), "{out}");
}
