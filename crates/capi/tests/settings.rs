//! A bad setting in the environment makes `sss_init` fail at once in every
//! task, with a message naming the variable, instead of a panic in the
//! progress thread and a job that hangs until killed.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use sss_testkit::cc::cc_libsss;
use sss_testkit::{root, Launcher};

/// See `c_api.rs`: set when this binary is re-executed as the launcher.
const LAUNCH_ENV: &str = "SSS_CAPI_SETTINGS_TEST_LAUNCH";
/// The launcher's own `--timeout` is 20 s: a hung job ends with 124 by
/// then.
const LAUNCHER: Launcher = Launcher::new(LAUNCH_ENV);

/// Not a test of its own: the launcher when [`LAUNCH_ENV`] is set.
#[test]
fn launcher_mode() {
    LAUNCHER.launcher_mode();
}

fn pingpong(dir: &tempfile::TempDir) -> PathBuf {
    let exe = dir.path().join("pingpong");
    let src = root().join("examples/c/pingpong.c");
    cc_libsss(&["-O1"], &exe, &[&src]);
    exe
}

#[test]
fn bad_settings_fail_init_promptly_and_name_the_variable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let exe = pingpong(&dir);
    for (var, value) in [
        ("SSS_RTO_MAX_US", "0"),
        // Would overflow when turned into nanoseconds.
        ("SSS_RTO_MIN_US", "18446744073709551615"),
        // Would be truncated to 0 by a cast to 32 bits.
        ("SSS_RETRIES", "4294967296"),
        ("SSS_WINDOW", "many"),
    ] {
        let t = Instant::now();
        let (code, _out, err) = LAUNCHER.run(
            &["-n", "2", "--hosts", "127.0.0.2,127.0.0.3"],
            &exe,
            &["10", "4000"],
            &[(var, value)],
        );
        let took = t.elapsed();
        assert!(code.is_some(), "{var}={value}: the launcher hung\n{err}");
        assert_ne!(code, Some(0), "{var}={value}: the job succeeded\n{err}");
        assert_ne!(code, Some(124), "{var}={value}: the job hung\n{err}");
        assert!(
            !err.contains("panicked"),
            "{var}={value}: a panic instead of an error\n{err}"
        );
        let line = err
            .lines()
            .find(|l| l.contains("sss_init") && l.contains(var))
            .unwrap_or_else(|| panic!("{var}={value}: no message naming it\n{err}"));
        assert!(line.contains("invalid parameter"), "{line}");
        eprintln!("{var}={value}: {took:?}: {line}");
        assert!(took < Duration::from_secs(15), "{var}={value}: {took:?}");
    }
}
