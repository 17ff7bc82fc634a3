//! The file rendezvous under foreign launchers (tasks are threads here; the
//! launcher crate runs the same with separate processes).

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use sss_boot::{job_id_from_key, Boot, BootError, JobSecret, Launcher};

fn owned(v: &[(&str, String)]) -> Vec<(String, String)> {
    v.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

/// Slurm step variables for `rank` of `size`, with a two-node layout.
fn slurm(dir: &Path, rank: u32, size: u32, nodes: &[&str]) -> Vec<(String, String)> {
    owned(&[
        ("SLURM_PROCID", rank.to_string()),
        ("SLURM_NTASKS", size.to_string()),
        ("SLURM_JOB_ID", "4242".into()),
        ("SLURM_STEP_ID", "0".into()),
        ("SLURMD_NODENAME", nodes[rank as usize].to_string()),
        ("SSS_BOOT_DIR", dir.display().to_string()),
        ("SSS_BOOT_TIMEOUT", "20".into()),
    ])
}

fn is_empty_dir(dir: &Path) -> bool {
    std::fs::read_dir(dir).unwrap().next().is_none()
}

#[test]
fn slurm_tasks_gather_and_learn_the_node_layout() {
    let tmp = tempfile::tempdir().unwrap();
    let nodes = ["n1", "n1", "n2", "n2", "n1"];
    let tasks: Vec<_> = (0..5u32)
        .map(|rank| {
            let v = slurm(tmp.path(), rank, 5, &nodes);
            thread::spawn(move || {
                let mut b = Boot::from_vars(v).unwrap();
                assert_eq!(b.launcher(), Launcher::Slurm);
                assert_eq!(b.job(), job_id_from_key("slurm-4242.0"));
                let layout = (
                    b.node().to_string(),
                    b.node_id(),
                    b.local_rank(),
                    b.local_size(),
                );
                for round in 0..4u32 {
                    let mine = format!("{rank}:{round}");
                    let all = b.allgather(mine.as_bytes()).unwrap();
                    let want: Vec<Vec<u8>> = (0..5)
                        .map(|r| format!("{r}:{round}").into_bytes())
                        .collect();
                    assert_eq!(all, want);
                }
                b.barrier().unwrap();
                layout
            })
        })
        .collect();
    let layouts: Vec<_> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
    let want = [
        ("n1", 0, 0, 3),
        ("n1", 0, 1, 3),
        ("n2", 1, 0, 2),
        ("n2", 1, 1, 2),
        ("n1", 0, 2, 3),
    ];
    for (got, want) in layouts.iter().zip(want) {
        assert_eq!((got.0.as_str(), got.1, got.2, got.3), want);
    }
    // Every round was removed by the last task to finish it.
    assert!(
        is_empty_dir(tmp.path()),
        "left: {:?}",
        std::fs::read_dir(tmp.path()).unwrap().collect::<Vec<_>>()
    );
}

#[test]
fn open_mpi_and_pmi_variables_work_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().display().to_string();
    let ompi: Vec<_> = (0..2u32)
        .map(|r| {
            owned(&[
                ("OMPI_COMM_WORLD_RANK", r.to_string()),
                ("OMPI_COMM_WORLD_SIZE", "2".into()),
                ("OMPI_COMM_WORLD_LOCAL_RANK", r.to_string()),
                ("OMPI_COMM_WORLD_LOCAL_SIZE", "2".into()),
                ("OMPI_MCA_ess_base_jobid", "31337".into()),
                ("SSS_BOOT_DIR", dir.clone()),
            ])
        })
        .collect();
    let pmi: Vec<_> = (0..2u32)
        .map(|r| {
            owned(&[
                ("PMI_RANK", r.to_string()),
                ("PMI_SIZE", "2".into()),
                ("PMI_PORT", "host:5000".into()),
                ("SSS_BOOT_DIR", dir.clone()),
            ])
        })
        .collect();
    for (set, launcher) in [(ompi, Launcher::OpenMpi), (pmi, Launcher::Pmi)] {
        let tasks: Vec<_> = set
            .into_iter()
            .map(|v| {
                thread::spawn(move || {
                    let mut b = Boot::from_vars(v).unwrap();
                    assert_eq!(b.launcher(), launcher);
                    assert_eq!(b.local_size(), 2);
                    let all = b.allgather(&[b.rank() as u8]).unwrap();
                    assert_eq!(all, vec![vec![0u8], vec![1u8]]);
                    b.job()
                })
            })
            .collect();
        let jobs: Vec<u32> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(jobs[0], jobs[1]);
    }
    assert!(is_empty_dir(tmp.path()));
}

#[test]
fn missing_task_times_out_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v = slurm(tmp.path(), 0, 3, &["a", "a", "a"]);
    v.push(("SSS_BOOT_TIMEOUT".into(), "0.3".into()));
    let t = Instant::now();
    let err = Boot::from_vars(v).unwrap_err();
    assert!(matches!(err, BootError::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("task(s) 1, 2"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn stale_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let v = slurm(tmp.path(), 1, 2, &["a", "a"]);
    let stale = tmp.path().join("sss-boot-slurm-4242.0").join("0");
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&stale)
        .unwrap();
    std::fs::write(stale.join("1"), b"old").unwrap();
    let err = Boot::from_vars(v).unwrap_err();
    assert!(matches!(err, BootError::Inconsistent(_)), "{err}");
    assert!(err.to_string().contains("left over"), "{err}");
}

#[test]
fn tasks_that_disagree_on_the_size_are_told() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = format!("file:{}", tmp.path().join("rdv").display());
    let mk = |rank: u32, size: u32| {
        owned(&[
            ("PMI_RANK", rank.to_string()),
            ("PMI_SIZE", size.to_string()),
            ("SSS_BOOT", dir.clone()),
            ("SSS_BOOT_KEY", "same".into()),
            ("SSS_BOOT_TIMEOUT", "2".into()),
        ])
    };
    // Rank 0 thinks the job has 2 tasks, rank 1 thinks 3: both wait for
    // ranks 0 and 1 in round 0, so rank 0 completes and sees the mismatch.
    let a = thread::spawn({
        let v = mk(0, 2);
        move || Boot::from_vars(v)
    });
    let b = thread::spawn({
        let v = mk(1, 3);
        move || Boot::from_vars(v)
    });
    let err = a.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("size"), "{err}");
    let _ = b.join().unwrap();
}

/// The default rendezvous directory of the Slurm job of [`slurm`].
fn top(base: &Path) -> std::path::PathBuf {
    base.join("sss-boot-slurm-4242.0")
}

/// Rank 0 of 2 booting under `base`, with a short timeout: a refusal must
/// come at once, a wait would be a failure.
fn boot_alone(base: &Path) -> BootError {
    let mut v = slurm(base, 0, 2, &["a", "a"]);
    v.push(("SSS_BOOT_TIMEOUT".into(), "1".into()));
    Boot::from_vars(v).unwrap_err()
}

fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

#[test]
fn a_world_open_rendezvous_directory_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = top(tmp.path());
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = boot_alone(tmp.path());
    let msg = err.to_string();
    assert!(matches!(err, BootError::UnsafeDir { .. }), "{msg}");
    assert!(msg.contains(&dir.display().to_string()), "{msg}");
    assert!(msg.contains("0777"), "{msg}");
    assert!(msg.contains("SSS_BOOT_DIR"), "{msg}");
    // Nothing of ours was put into it.
    assert!(is_empty_dir(&dir));

    // A directory named by SSS_BOOT=file: must be private too.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut v = slurm(tmp.path(), 0, 2, &["a", "a"]);
    v.push(("SSS_BOOT".into(), format!("file:{}", dir.display())));
    v.push(("SSS_BOOT_TIMEOUT".into(), "1".into()));
    let err = Boot::from_vars(v).unwrap_err();
    assert!(err.to_string().contains("0755"), "{err}");
    assert!(is_empty_dir(&dir));
}

#[test]
fn a_rendezvous_directory_of_another_user_is_refused() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    if std::fs::metadata(tmp.path()).unwrap().uid() != 0 {
        eprintln!("skipped: only root can give a directory to another user");
        return;
    }
    let dir = top(tmp.path());
    std::fs::DirBuilder::new().create(&dir).unwrap();
    std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
    let err = boot_alone(tmp.path());
    let msg = err.to_string();
    assert!(matches!(err, BootError::UnsafeDir { .. }), "{msg}");
    assert!(msg.contains("uid 65534"), "{msg}");
    assert!(is_empty_dir(&dir));
}

#[test]
fn a_symlink_in_place_of_the_rendezvous_directory_is_refused() {
    use std::os::unix::fs::DirBuilderExt;
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&elsewhere)
        .unwrap();
    std::os::unix::fs::symlink(&elsewhere, top(tmp.path())).unwrap();
    let err = boot_alone(tmp.path());
    let msg = err.to_string();
    assert!(matches!(err, BootError::UnsafeDir { .. }), "{msg}");
    assert!(msg.contains("symbolic link"), "{msg}");
    assert!(is_empty_dir(&elsewhere), "nothing went through the link");
}

/// Runs a Slurm job of `n` tasks (threads) with extra variables; returns
/// every task's secret.
fn secrets_of_job(
    base: &Path,
    job: &str,
    n: u32,
    extra: &[(&str, String)],
) -> Vec<Option<JobSecret>> {
    let tasks: Vec<_> = (0..n)
        .map(|rank| {
            let mut v = slurm(base, rank, n, &["a", "a", "b"]);
            v.retain(|(k, _)| k != "SLURM_JOB_ID");
            v.push(("SLURM_JOB_ID".into(), job.into()));
            v.extend(owned(extra));
            thread::spawn(move || {
                let mut b = Boot::from_vars(v).unwrap();
                b.barrier().unwrap();
                b.secret().cloned()
            })
        })
        .collect();
    tasks.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn foreign_tasks_share_a_fresh_secret_per_job() {
    let tmp = tempfile::tempdir().unwrap();
    let a = secrets_of_job(tmp.path(), "1", 3, &[]);
    let b = secrets_of_job(tmp.path(), "2", 3, &[]);
    assert!(a[0].is_some() && b[0].is_some());
    assert!(a.iter().all(|s| *s == a[0]), "one secret per job");
    assert!(b.iter().all(|s| *s == b[0]), "one secret per job");
    assert_ne!(a[0], b[0], "fresh for every job");
    // An exported secret is used by everybody.
    let mine = JobSecret::generate().unwrap();
    let c = secrets_of_job(tmp.path(), "3", 3, &[("SSS_JOB_SECRET", mine.to_hex())]);
    assert!(c.iter().all(|s| s.as_ref() == Some(&mine)));
    assert!(is_empty_dir(tmp.path()));
}

/// Plays rank 1 of 2 beside a real rank 0 (with `extra` variables): waits
/// for rank 0's round-0 record, checks its mode, and answers with `mine`.
/// Returns rank 0's record and its result.
fn beside_rank_0(
    base: &Path,
    extra: &[(&str, String)],
    mine: &str,
) -> (String, Result<Boot, BootError>) {
    let mut v = slurm(base, 0, 2, &["a", "a"]);
    v.extend(owned(extra));
    let rank0 = thread::spawn(move || Boot::from_vars(v));
    let rdir = top(base).join("0");
    let rec = rdir.join("0");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !rec.exists() {
        assert!(Instant::now() < deadline, "rank 0 wrote nothing");
        thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(mode(&top(base)), 0o700);
    assert_eq!(mode(&rdir), 0o700);
    assert_eq!(mode(&rec), 0o600, "only its user may read the record");
    let theirs = String::from_utf8(std::fs::read(&rec).unwrap()).unwrap();
    std::fs::write(rdir.join("1"), mine).unwrap();
    (theirs, rank0.join().unwrap())
}

#[test]
fn rank_0_shares_its_secret_in_a_private_file_and_an_exported_one_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let (rec, b) = beside_rank_0(tmp.path(), &[], "slurm-4242.0\n2\n\na");
    let b = b.unwrap();
    let hex = b.secret().expect("a secret was drawn").to_hex();
    assert_eq!(rec.lines().nth(2), Some(hex.as_str()));

    let tmp = tempfile::tempdir().unwrap();
    let exported = JobSecret::generate().unwrap();
    let (rec, b) = beside_rank_0(
        tmp.path(),
        &[("SSS_JOB_SECRET", exported.to_hex())],
        "slurm-4242.0\n2\n\na",
    );
    assert_eq!(b.unwrap().secret(), Some(&exported));
    assert!(!rec.contains(&exported.to_hex()), "{rec}");
}

/// Plays rank 0 of 2 with the round-0 record `rec` beside a real rank 1.
fn beside_rank_1(rec: &str, extra: &[(&str, String)]) -> BootError {
    use std::os::unix::fs::DirBuilderExt;
    let tmp = tempfile::tempdir().unwrap();
    let rdir = top(tmp.path()).join("0");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&rdir)
        .unwrap();
    std::fs::write(rdir.join("0"), rec).unwrap();
    let mut v = slurm(tmp.path(), 1, 2, &["a", "a"]);
    v.extend(owned(extra));
    Boot::from_vars(v).unwrap_err()
}

#[test]
fn a_missing_or_malformed_secret_from_rank_0_is_refused() {
    let bad = "g".repeat(64);
    for rec in [
        "slurm-4242.0\n2\n\na".to_string(),
        format!("slurm-4242.0\n2\n{bad}\na"),
        "slurm-4242.0\n2".to_string(),
    ] {
        let err = beside_rank_1(&rec, &[]);
        let msg = err.to_string();
        assert!(matches!(err, BootError::Inconsistent(_)), "{msg}");
        assert!(msg.contains("secret"), "{msg}");
        assert!(!msg.contains(&bad), "never echoed: {msg}");
    }
}

#[test]
fn tasks_must_agree_on_an_exported_secret() {
    let exported = JobSecret::generate().unwrap();
    let env = [("SSS_JOB_SECRET", exported.to_hex())];
    // Task 0 exported one and task 1 did not.
    let err = beside_rank_1("slurm-4242.0\n2\n=00\na", &[]);
    assert!(err.to_string().contains("export it for all"), "{err}");
    // Task 1 exported one and task 0 drew its own.
    let drawn = JobSecret::generate().unwrap().to_hex();
    let err = beside_rank_1(&format!("slurm-4242.0\n2\n{drawn}\na"), &env);
    assert!(err.to_string().contains("export it for all"), "{err}");
    assert!(!err.to_string().contains(&drawn), "{err}");
    // Both exported one, but not the same: real tasks.
    let tmp = tempfile::tempdir().unwrap();
    let tasks: Vec<_> = (0..2u32)
        .map(|rank| {
            let mut v = slurm(tmp.path(), rank, 2, &["a", "a"]);
            let s = JobSecret::generate().unwrap();
            v.push(("SSS_JOB_SECRET".into(), s.to_hex()));
            thread::spawn(move || Boot::from_vars(v).map(|_| ()))
        })
        .collect();
    let res: Vec<_> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
    let err = res[1].as_ref().unwrap_err();
    assert!(
        err.to_string().contains("different SSS_JOB_SECRET"),
        "{err}"
    );
}

/// Regression: the last task out of a round removes the rendezvous
/// directory when it is empty, and a task starting the next round could
/// find it gone between making it and checking it ("examining …: No such
/// file or directory", seen once under Open MPI's `mpirun`). Many short
/// rounds make that window likely.
#[test]
fn rounds_in_quick_succession_survive_the_directory_coming_and_going() {
    let tmp = tempfile::tempdir().unwrap();
    let nodes = ["n1"; 6];
    let tasks: Vec<_> = (0..6u32)
        .map(|rank| {
            let v = slurm(tmp.path(), rank, 6, &nodes);
            thread::spawn(move || {
                let mut b = Boot::from_vars(v).unwrap();
                for round in 0..300u32 {
                    let all = b.allgather(&round.to_le_bytes()).unwrap();
                    assert!(all.iter().all(|d| d == &round.to_le_bytes()));
                }
            })
        })
        .collect();
    for t in tasks {
        t.join().unwrap();
    }
}
