//! The file rendezvous under foreign launchers (tasks are threads here; the
//! launcher crate runs the same with separate processes).

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use sss_boot::{job_id_from_key, Boot, BootError, Launcher};

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
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(stale.join("1"), b"old").unwrap();
    let err = Boot::from_vars(v).unwrap_err();
    assert!(matches!(err, BootError::Inconsistent(_)), "{err}");
    assert!(err.to_string().contains("left over"), "{err}");
}

#[test]
fn tasks_that_disagree_on_the_size_are_told() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = format!("file:{}", tmp.path().display());
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
