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
