//! Launcher detection from environment variables (rules in the crate docs).

use crate::auth::JobSecret;
use std::path::PathBuf;
use std::time::Duration;

use crate::file::FileClient;
use crate::tcp::TcpClient;
use crate::{job_id_from_key, vars, Boot, BootError, Launcher, Rendezvous, DEFAULT_TIMEOUT};

/// Reads one variable; `None` when unset.
type Get<'a> = &'a dyn Fn(&str) -> Option<String>;

/// What a foreign launcher told us.
struct Foreign {
    launcher: Launcher,
    rank: u32,
    size: u32,
    local_rank: Option<u32>,
    local_size: Option<u32>,
    /// Job key from the launcher's variables, if it has one.
    key: Option<String>,
    /// Node name from the launcher, if it has one.
    node: Option<String>,
}

pub(crate) fn detect(get: Get) -> Result<Boot, BootError> {
    let timeout = timeout(get)?;
    if get(vars::RANK).is_some() {
        return ours(get, timeout);
    }
    let set = |v: &str| get(v).is_some_and(|s| !s.is_empty());
    let foreign = if set("PMI_RANK") && set("PMI_SIZE") {
        Foreign {
            launcher: Launcher::Pmi,
            rank: num(get, "PMI_RANK")?,
            size: num(get, "PMI_SIZE")?,
            local_rank: opt_num(get, "MPI_LOCALRANKID")?,
            local_size: opt_num(get, "MPI_LOCALNRANKS")?,
            key: get("PMI_PORT")
                .filter(|s| !s.is_empty())
                .map(|p| format!("pmi-{p}")),
            node: None,
        }
    } else if set("OMPI_COMM_WORLD_RANK") && set("OMPI_COMM_WORLD_SIZE") {
        Foreign {
            launcher: Launcher::OpenMpi,
            rank: num(get, "OMPI_COMM_WORLD_RANK")?,
            size: num(get, "OMPI_COMM_WORLD_SIZE")?,
            local_rank: opt_num(get, "OMPI_COMM_WORLD_LOCAL_RANK")?,
            local_size: opt_num(get, "OMPI_COMM_WORLD_LOCAL_SIZE")?,
            key: get("OMPI_MCA_ess_base_jobid")
                .filter(|s| !s.is_empty())
                .map(|j| format!("ompi-{j}")),
            node: None,
        }
    } else if set("SLURM_PROCID") && (set("SLURM_STEP_ID") || set("SLURM_STEPID")) {
        let size_var = ["SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"]
            .into_iter()
            .find(|v| set(v))
            .ok_or(BootError::MissingEnv {
                var: "SLURM_NTASKS",
                context: "SLURM_PROCID is set and the job size is needed",
            })?;
        let job_var = ["SLURM_JOB_ID", "SLURM_JOBID"]
            .into_iter()
            .find(|v| set(v))
            .ok_or(BootError::MissingEnv {
                var: "SLURM_JOB_ID",
                context: "SLURM_PROCID is set and the job key is needed",
            })?;
        let step_var = if set("SLURM_STEP_ID") {
            "SLURM_STEP_ID"
        } else {
            "SLURM_STEPID"
        };
        let key = format!(
            "slurm-{}.{}",
            get(job_var).unwrap_or_default(),
            get(step_var).unwrap_or_default()
        );
        Foreign {
            launcher: Launcher::Slurm,
            rank: num(get, "SLURM_PROCID")?,
            size: num(get, size_var)?,
            local_rank: opt_num(get, "SLURM_LOCALID")?,
            local_size: None,
            key: Some(key),
            node: get("SLURMD_NODENAME").filter(|s| !s.is_empty()),
        }
    } else {
        return singleton(get, timeout);
    };
    foreign_boot(get, foreign, timeout)
}

/// `SSS_BOOT_TIMEOUT`, or the default.
fn timeout(get: Get) -> Result<Duration, BootError> {
    let Some(v) = get(vars::BOOT_TIMEOUT) else {
        return Ok(DEFAULT_TIMEOUT);
    };
    match v.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(BootError::BadEnv {
            var: vars::BOOT_TIMEOUT,
            value: v,
            reason: "expected a positive number of seconds".into(),
        }),
    }
}

fn parse_num(var: &'static str, v: String) -> Result<u32, BootError> {
    v.trim().parse::<u32>().map_err(|e| BootError::BadEnv {
        var,
        value: v,
        reason: format!("expected a non-negative integer ({e})"),
    })
}

fn num(get: Get, var: &'static str) -> Result<u32, BootError> {
    match get(var) {
        Some(v) => parse_num(var, v),
        None => Err(BootError::MissingEnv {
            var,
            context: "the launcher's other variables are set",
        }),
    }
}

fn opt_num(get: Get, var: &'static str) -> Result<Option<u32>, BootError> {
    get(var)
        .filter(|s| !s.is_empty())
        .map(|v| parse_num(var, v))
        .transpose()
}

fn ours_num(get: Get, var: &'static str) -> Result<u32, BootError> {
    match get(var) {
        Some(v) => parse_num(var, v),
        None => Err(BootError::MissingEnv {
            var,
            context: "SSS_RANK is set, so the task was started by `sss run`, which sets it",
        }),
    }
}

fn check_rank(rank: u32, size: u32, var: &'static str) -> Result<(), BootError> {
    if size == 0 || rank >= size {
        return Err(BootError::BadEnv {
            var,
            value: rank.to_string(),
            reason: format!("rank must be below the job size {size}"),
        });
    }
    Ok(())
}

/// Started by `sss run`: everything is in the environment.
fn ours(get: Get, timeout: Duration) -> Result<Boot, BootError> {
    let job = ours_num(get, vars::JOB)?;
    let rank = ours_num(get, vars::RANK)?;
    let size = ours_num(get, vars::SIZE)?;
    check_rank(rank, size, vars::RANK)?;
    let node = get(vars::NODE)
        .filter(|s| !s.is_empty())
        .ok_or(BootError::MissingEnv {
            var: vars::NODE,
            context: "SSS_RANK is set, so the task was started by `sss run`, which sets it",
        })?;
    let node_id = ours_num(get, vars::NODE_ID)?;
    let local_rank = ours_num(get, vars::LOCAL_RANK)?;
    let local_size = ours_num(get, vars::LOCAL_SIZE)?;
    check_rank(local_rank, local_size, vars::LOCAL_RANK)?;
    if local_size > size {
        return Err(BootError::BadEnv {
            var: vars::LOCAL_SIZE,
            value: local_size.to_string(),
            reason: format!("more tasks on the node than in the job ({size})"),
        });
    }
    let rdv = if size == 1 {
        Rendezvous::Single
    } else {
        let spec = get(vars::BOOT).ok_or(BootError::MissingEnv {
            var: vars::BOOT,
            context: "a job of several tasks needs a rendezvous",
        })?;
        rendezvous(get, &spec, job, rank, size, timeout)?
    };
    Ok(Boot {
        secret: job_secret(get)?,
        launcher: Launcher::Sss,
        job,
        rank,
        size,
        node,
        node_id,
        local_rank,
        local_size,
        timeout,
        rdv,
        poisoned: false,
    })
}

/// `SSS_JOB_SECRET`, if set.
fn job_secret(get: Get) -> Result<Option<JobSecret>, BootError> {
    match get(vars::JOB_SECRET).filter(|v| !v.is_empty()) {
        Some(v) => Ok(Some(JobSecret::from_hex(&v).ok_or_else(|| {
            BootError::BadEnv {
                var: vars::JOB_SECRET,
                // Never echo a secret, even a malformed one.
                value: "(hidden)".into(),
                reason: "expected 64 hex digits".into(),
            }
        })?)),
        None => Ok(None),
    }
}

/// Parses `SSS_BOOT` and connects.
fn rendezvous(
    get: Get,
    spec: &str,
    job: u32,
    rank: u32,
    size: u32,
    timeout: Duration,
) -> Result<Rendezvous, BootError> {
    if let Some(addr) = spec.strip_prefix("tcp:") {
        let secret = job_secret(get)?;
        Ok(Rendezvous::Tcp(TcpClient::connect(
            addr,
            job,
            rank,
            size,
            timeout,
            secret.as_ref(),
        )?))
    } else if let Some(dir) = spec.strip_prefix("file:").filter(|d| !d.is_empty()) {
        Ok(Rendezvous::File(FileClient::new(
            PathBuf::from(dir),
            rank,
            size,
            timeout,
        )))
    } else {
        Err(BootError::BadEnv {
            var: vars::BOOT,
            value: spec.to_string(),
            reason: "expected tcp:HOST:PORT or file:/directory".into(),
        })
    }
}

/// Started by Slurm, PMI or Open MPI: rendezvous through files, and learn
/// the node layout with one allgather.
fn foreign_boot(get: Get, f: Foreign, timeout: Duration) -> Result<Boot, BootError> {
    let rank_var = match f.launcher {
        Launcher::Pmi => "PMI_RANK",
        Launcher::OpenMpi => "OMPI_COMM_WORLD_RANK",
        _ => "SLURM_PROCID",
    };
    check_rank(f.rank, f.size, rank_var)?;
    let boot_spec = get(vars::BOOT).filter(|s| !s.is_empty());
    let key = get(vars::BOOT_KEY)
        .filter(|s| !s.is_empty())
        .or_else(|| {
            boot_spec
                .as_deref()
                .and_then(|s| s.strip_prefix("file:"))
                .map(|d| format!("dir-{d}"))
        })
        .or(f.key)
        .unwrap_or_else(|| format!("ppid-{}", std::os::unix::process::parent_id()));
    let job = job_id_from_key(&key);
    let node = get(vars::NODE)
        .filter(|s| !s.is_empty())
        .or(f.node)
        .unwrap_or_else(hostname);
    let mut boot = Boot {
        secret: job_secret(get)?,
        launcher: f.launcher,
        job,
        rank: f.rank,
        size: f.size,
        node,
        node_id: 0,
        local_rank: 0,
        local_size: 1,
        timeout,
        rdv: Rendezvous::Single,
        poisoned: false,
    };
    if f.size == 1 {
        return Ok(boot);
    }
    boot.rdv = match boot_spec {
        Some(spec) => rendezvous(get, &spec, job, f.rank, f.size, timeout)?,
        None => {
            let base = get(vars::BOOT_DIR)
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| "/tmp".into());
            let dir = PathBuf::from(base).join(format!("sss-boot-{}", sanitize(&key)));
            Rendezvous::File(FileClient::new(dir, f.rank, f.size, timeout))
        }
    };

    // One round: everybody's key, size and node, to check agreement and
    // to place tasks on nodes; rank 0 adds the job's secret.
    let exported = boot.secret.take();
    let drawn = match (&exported, f.rank) {
        (None, 0) => Some(JobSecret::generate().map_err(|e| {
            BootError::io(
                "drawing the job secret",
                std::io::Error::other(e.to_string()),
            )
        })?),
        _ => None,
    };
    let offer = match (&exported, &drawn) {
        // Not the secret itself, only enough to see that all tasks agree.
        (Some(s), _) => format!("={}", s.fingerprint()),
        (None, Some(s)) => s.to_hex(),
        (None, None) => String::new(),
    };
    let mine = format!("{key}\n{}\n{offer}\n{}", f.size, boot.node);
    let all = boot.allgather(mine.as_bytes())?;
    let mut nodes: Vec<String> = Vec::with_capacity(all.len());
    let mut rank0_offer = None;
    for (k, rec) in all.iter().enumerate() {
        let rec = String::from_utf8_lossy(rec);
        let mut it = rec.splitn(4, '\n');
        let (kk, ks, ko, kn) = (it.next(), it.next(), it.next(), it.next());
        if kk != Some(key.as_str()) || ks != Some(f.size.to_string().as_str()) {
            return Err(BootError::Inconsistent(format!(
                "task {k} has job key {:?} and size {:?}, task {} has {key:?} and {}",
                kk.unwrap_or(""),
                ks.unwrap_or(""),
                f.rank,
                f.size
            )));
        }
        if k == 0 {
            rank0_offer = ko.map(str::to_string);
        }
        nodes.push(kn.unwrap_or("").to_string());
    }
    boot.secret = Some(match (exported, drawn) {
        (Some(s), _) => {
            check_exported(&s, rank0_offer.as_deref(), f.rank)?;
            s
        }
        (None, Some(s)) => s,
        (None, None) => shared_secret(rank0_offer.as_deref(), f.rank)?,
    });
    let me = &boot.node;
    let mut firsts: Vec<&str> = Vec::new();
    for n in &nodes {
        if !firsts.contains(&n.as_str()) {
            firsts.push(n);
        }
    }
    boot.node_id = firsts.iter().position(|n| n == me).unwrap_or(0) as u32;
    let derived_rank = nodes[..f.rank as usize].iter().filter(|n| *n == me).count() as u32;
    let derived_size = nodes.iter().filter(|n| *n == me).count() as u32;
    boot.local_rank = f.local_rank.unwrap_or(derived_rank);
    boot.local_size = f.local_size.unwrap_or(derived_size);
    if boot.local_rank >= boot.local_size {
        return Err(BootError::Inconsistent(format!(
            "local rank {} is not below local size {}",
            boot.local_rank, boot.local_size
        )));
    }
    Ok(boot)
}

/// The secret rank 0 drew, from its round-0 `offer`; `rank` is ours.
/// Errors never show the offer: it may be a secret.
fn shared_secret(offer: Option<&str>, rank: u32) -> Result<JobSecret, BootError> {
    let why = match offer {
        Some(o) if o.starts_with('=') => {
            "task 0 uses an exported SSS_JOB_SECRET and this task has none; \
             export it for all tasks of the job or for none"
        }
        None | Some("") => "task 0 shared no job secret",
        Some(o) => match JobSecret::from_hex(o) {
            Some(s) => return Ok(s),
            None => "the job secret shared by task 0 is not 64 hex digits",
        },
    };
    Err(BootError::Inconsistent(format!("{why} (task {rank})")))
}

/// Checks that rank 0 uses the same exported secret as this task.
fn check_exported(mine: &JobSecret, offer: Option<&str>, rank: u32) -> Result<(), BootError> {
    match offer.and_then(|o| o.strip_prefix('=')) {
        Some(fp) if fp == mine.fingerprint() => Ok(()),
        Some(_) => Err(BootError::Inconsistent(format!(
            "tasks 0 and {rank} have different SSS_JOB_SECRET values"
        ))),
        None => Err(BootError::Inconsistent(format!(
            "task {rank} has an exported SSS_JOB_SECRET and task 0 has none; \
             export it for all tasks of the job or for none"
        ))),
    }
}

/// No launcher: a job of one task with a random id.
fn singleton(get: Get, timeout: Duration) -> Result<Boot, BootError> {
    let job = getrandom::u32()
        .unwrap_or_else(|_| std::process::id())
        .max(1);
    Ok(Boot {
        secret: None,
        launcher: Launcher::Singleton,
        job,
        rank: 0,
        size: 1,
        node: get(vars::NODE)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(hostname),
        node_id: 0,
        local_rank: 0,
        local_size: 1,
        timeout,
        rdv: Rendezvous::Single,
        poisoned: false,
    })
}

/// The kernel's host name, without a libc call.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// A job key as a file name component.
fn sanitize(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn boot(vars: &[(&str, &str)]) -> Result<Boot, BootError> {
        let m: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        detect(&|k: &str| m.get(k).cloned())
    }

    #[test]
    fn ours_single_task_needs_no_rendezvous() {
        let b = boot(&[
            ("SSS_JOB", "42"),
            ("SSS_RANK", "0"),
            ("SSS_SIZE", "1"),
            ("SSS_NODE", "127.0.0.2"),
            ("SSS_NODE_ID", "0"),
            ("SSS_LOCAL_RANK", "0"),
            ("SSS_LOCAL_SIZE", "1"),
        ])
        .unwrap();
        assert_eq!(
            (b.job(), b.rank(), b.size(), b.node()),
            (42, 0, 1, "127.0.0.2")
        );
        assert_eq!(b.launcher(), Launcher::Sss);
    }

    #[test]
    fn ours_reports_missing_and_bad_variables() {
        let e = boot(&[("SSS_RANK", "0"), ("SSS_SIZE", "1")]).unwrap_err();
        assert!(e.to_string().contains("SSS_JOB"), "{e}");
        let e = boot(&[("SSS_RANK", "x"), ("SSS_JOB", "1")]).unwrap_err();
        assert!(e.to_string().contains("SSS_RANK=\"x\""), "{e}");
        let e = boot(&[("SSS_JOB", "1"), ("SSS_RANK", "3"), ("SSS_SIZE", "2")]).unwrap_err();
        assert!(e.to_string().contains("below the job size 2"), "{e}");
        let e = boot(&[
            ("SSS_JOB", "1"),
            ("SSS_RANK", "0"),
            ("SSS_SIZE", "2"),
            ("SSS_NODE", "a"),
            ("SSS_NODE_ID", "0"),
            ("SSS_LOCAL_RANK", "0"),
            ("SSS_LOCAL_SIZE", "2"),
            ("SSS_BOOT", "carrier-pigeon"),
        ])
        .unwrap_err();
        assert!(e.to_string().contains("tcp:HOST:PORT"), "{e}");
    }

    #[test]
    fn timeout_is_validated() {
        for bad in ["0", "-1", "nan", "soon"] {
            let e = boot(&[("SSS_BOOT_TIMEOUT", bad)]).unwrap_err();
            assert!(e.to_string().contains("SSS_BOOT_TIMEOUT"), "{e}");
        }
        let b = boot(&[("SSS_BOOT_TIMEOUT", "2.5")]).unwrap();
        assert_eq!(b.timeout(), Duration::from_millis(2500));
    }

    #[test]
    fn slurm_batch_script_is_a_singleton() {
        // No step id: the batch shell itself, not one of `ntasks` tasks.
        let b = boot(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "9"),
        ])
        .unwrap();
        assert_eq!(b.launcher(), Launcher::Singleton);
    }

    #[test]
    fn foreign_single_task_and_job_key() {
        let b = boot(&[
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
            ("SLURM_JOB_ID", "9"),
            ("SLURM_STEP_ID", "2"),
            ("SLURMD_NODENAME", "n17"),
        ])
        .unwrap();
        assert_eq!(b.launcher(), Launcher::Slurm);
        assert_eq!(b.job(), job_id_from_key("slurm-9.2"));
        assert_eq!(b.node(), "n17");
        let b = boot(&[
            ("OMPI_COMM_WORLD_RANK", "0"),
            ("OMPI_COMM_WORLD_SIZE", "1"),
            ("OMPI_MCA_ess_base_jobid", "123"),
            // An mpirun inside a Slurm allocation: the inner launcher wins.
            ("SLURM_PROCID", "3"),
            ("SLURM_NTASKS", "4"),
            ("SLURM_JOB_ID", "9"),
            ("SLURM_STEP_ID", "0"),
        ])
        .unwrap();
        assert_eq!(b.launcher(), Launcher::OpenMpi);
        assert_eq!(b.job(), job_id_from_key("ompi-123"));
        let b = boot(&[("PMI_RANK", "0"), ("PMI_SIZE", "1"), ("SSS_BOOT_KEY", "k")]).unwrap();
        assert_eq!(b.launcher(), Launcher::Pmi);
        assert_eq!(b.job(), job_id_from_key("k"));
    }

    #[test]
    fn sanitize_keeps_file_names_flat() {
        assert_eq!(sanitize("pmi-host:1234/x"), "pmi-host_1234_x");
    }
}
