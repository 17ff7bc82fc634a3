//! Every `SSS_*` environment variable the runtime, the launcher, the DSM
//! and the daemons read: name, default, accepted values, meaning. `sss
//! info` prints it with the values in force; a test keeps it complete
//! (every variable the sources read is listed here).

/// Who reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// Every task (`Task::init`, `sss_init`).
    Task,
    /// The ADSM heap (`sss_dsm_init`).
    Dsm,
    /// The launcher, `sss run`.
    Launcher,
    /// The node daemon, `sssd`.
    Daemon,
    /// Set by a launcher for its tasks; users set it only to start tasks
    /// by hand.
    Bootstrap,
}

impl Reader {
    /// As printed by `sss info`.
    pub fn name(self) -> &'static str {
        match self {
            Reader::Task => "task",
            Reader::Dsm => "dsm",
            Reader::Launcher => "launcher",
            Reader::Daemon => "daemon",
            Reader::Bootstrap => "bootstrap",
        }
    }
}

/// One setting.
#[derive(Debug, Clone, Copy)]
pub struct Known {
    /// The variable.
    pub name: &'static str,
    /// Its default, as text.
    pub default: &'static str,
    /// What it accepts.
    pub accepts: &'static str,
    /// What it does, in one line.
    pub meaning: &'static str,
    /// Who reads it.
    pub reader: Reader,
    /// Its value is a secret: never printed.
    pub secret: bool,
}

const fn k(
    name: &'static str,
    default: &'static str,
    accepts: &'static str,
    meaning: &'static str,
    reader: Reader,
) -> Known {
    Known {
        name,
        default,
        accepts,
        meaning,
        reader,
        secret: false,
    }
}

const fn secret(name: &'static str, meaning: &'static str, reader: Reader) -> Known {
    Known {
        name,
        default: "(none)",
        accepts: "64 hex digits",
        meaning,
        reader,
        secret: true,
    }
}

use Reader::*;

/// The settings, by reader then name.
pub const SETTINGS: &[Known] = &[
    k(
        "SSS_TRANSPORT",
        "auto",
        "auto, udp, shm (= auto)",
        "shm within a node and udp across (auto), or udp everywhere",
        Task,
    ),
    k(
        "SSS_SECURITY",
        "auth",
        "auth, encrypt, none",
        "protection of udp datagrams: authenticated, also encrypted, or checksummed only",
        Task,
    ),
    k(
        "SSS_SPIN_US",
        "50",
        "0..=10000000",
        "least a waiter spins before it blocks, µs (the spin adapts upward)",
        Task,
    ),
    k(
        "SSS_SPIN_MAX_US",
        "250",
        "0..=10000000",
        "most a waiter spins before it blocks, µs",
        Task,
    ),
    k(
        "SSS_BIND",
        "auto",
        "auto, core, none",
        "CPU binding: round robin when the job's tasks outnumber the node's CPUs (auto)",
        Task,
    ),
    k(
        "SSS_SOCKBUF",
        "4194304",
        "4096..=1073741824",
        "udp socket buffer size, bytes",
        Task,
    ),
    k(
        "SSS_RETRIES",
        "12",
        "0..=1000000",
        "timeouts without progress before a peer is declared down",
        Task,
    ),
    k(
        "SSS_RTO_MIN_US",
        "2000",
        "1..=3600000000",
        "least retransmission timeout, µs",
        Task,
    ),
    k(
        "SSS_RTO_MAX_US",
        "200000",
        "1..=3600000000",
        "most retransmission timeout after back-off, µs",
        Task,
    ),
    k(
        "SSS_WINDOW",
        "1024",
        "1..=65536",
        "packets in flight per peer",
        Task,
    ),
    k(
        "SSS_PAYLOAD",
        "from the routes: 8892 on loopback and jumbo frames, 1392 on Ethernet",
        "64..=65000",
        "payload bytes per datagram (by default a datagram fills the smallest frame \
         the routes to the peers carry, at most a 9000-byte jumbo frame)",
        Task,
    ),
    k(
        "SSS_SSWAIT_SPIN_US",
        "2000",
        "0..=10000000",
        "SS-Wait: spin while the partner runs, µs (across the network: since the last datagram received)",
        Task,
    ),
    k(
        "SSS_SSWAIT_BLOCK_US",
        "5000",
        "1..=10000000",
        "SS-Wait: longest block before looking again, µs",
        Task,
    ),
    k(
        "SSS_SSWAIT_YIELDS",
        "32",
        "0..=1000000",
        "SS-Wait: yields before blocking when the partner is not running",
        Task,
    ),
    k(
        "SSS_SSWAIT_YIELD_US",
        "1000",
        "0..=10000000",
        "SS-Wait: time spent yielding before blocking, µs",
        Task,
    ),
    k(
        "SSS_SSWAIT_CPUS",
        "(the CPUs the task may use)",
        "1..=65536",
        "CPUs SS-Wait assumes the node has",
        Task,
    ),
    k(
        "SSS_SHM_DIR",
        "/dev/shm",
        "an absolute directory",
        "where shared-memory files live (every task and daemon of a node must agree)",
        Task,
    ),
    k(
        "SSS_FAULT_DROP",
        "0",
        "0.0..=1.0",
        "fault injection: fraction of outgoing udp datagrams dropped",
        Task,
    ),
    k(
        "SSS_FAULT_DUP",
        "0",
        "0.0..=1.0",
        "fault injection: fraction of outgoing udp datagrams sent twice",
        Task,
    ),
    k(
        "SSS_NO_GSO",
        "(unset)",
        "set or unset",
        "when set, udp sends one datagram per system call instead of GSO batches",
        Task,
    ),
    k(
        "SSS_DSM_HEAP",
        "64G",
        "a size with K, M or G, one page to 64T",
        "bytes of shared heap reserved in every task",
        Dsm,
    ),
    k(
        "SSS_DSM_PROTOCOL",
        "ulrc",
        "ulrc, invalidate, home_update, update, update_drct, home_only",
        "protocol of allocations that name none",
        Dsm,
    ),
    k(
        "SSS_DSM_FAULTS",
        "signal",
        "signal, thread",
        "which thread resolves a heap page fault: the faulting one (SIGBUS) or the fault thread",
        Dsm,
    ),
    k(
        "SSS_DSM_WRITES",
        "note",
        "note, trap",
        "how writes are recorded: explicit notes or write-protect faults",
        Dsm,
    ),
    k(
        "SSS_DSM_PREFETCH",
        "0",
        "0..=256",
        "pages fetched after a missing page with the same home, in one READ",
        Dsm,
    ),
    k(
        "SSS_DSM_STALL",
        "60",
        "SECONDS, abort:SECONDS, off",
        "a barrier waiting this long names the tasks not there (abort: and fails)",
        Dsm,
    ),
    k(
        "SSS_DSM_FAULT_NO_WAKEUPS",
        "0",
        "0, 1",
        "fault injection: releasers never wake lock and barrier waiters",
        Dsm,
    ),
    k(
        "SSS_STATS",
        "(unset)",
        "json, 1 (MPI only), off",
        "print per task at finalize the DSM's counters, or MPI's traffic (json or one line)",
        Dsm,
    ),
    k(
        "SSS_MPI_DIRECT",
        "on",
        "on, off",
        "MPI: a receive from a task across the network posted before its message is noticed to the sender, which writes the message straight into it",
        Task,
    ),
    k(
        "SSS_MPI_NBC_SIGNAL",
        "on",
        "on, off",
        "MPI: while nonblocking collectives run, an MBCF signal after each message lets the receiver advance them between MPI calls",
        Task,
    ),
    k(
        "SSS_MPI_PEER_READ",
        "off",
        "on, off",
        "MPI: under Yama's ptrace_scope 1, let same-node tasks read large all-to-all blocks from this one's memory (any process of the user may then attach to it); off stages them",
        Task,
    ),
    k(
        "SSS_PARMACS_PLACEMENT",
        "first_touch",
        "first_touch, block, cyclic[:pages]",
        "PARMACS programs: placement of G_MALLOC memory",
        Dsm,
    ),
    k(
        "SSS_PARMACS_GLOBALS",
        "shared",
        "shared, fork",
        "PARMACS programs in trap mode: globals shared as with threads, or copied at CREATE",
        Dsm,
    ),
    k(
        "SSS_PARMACS_REEXEC",
        "(set by PARMACS)",
        "1",
        "PARMACS: marks the re-executed task (address layout); not a user setting",
        Dsm,
    ),
    k(
        "SSS_SSH",
        "ssh",
        "a command and its options (-o BatchMode=yes is added)",
        "how the ssh spawner reaches hosts",
        Launcher,
    ),
    k(
        "SSS_NO_DAEMON",
        "(unset)",
        "set or unset",
        "when set, sss run starts no node daemons",
        Launcher,
    ),
    k(
        "SSS_SSSD",
        "(beside sss, else PATH)",
        "a path",
        "the sssd binary sss run starts",
        Launcher,
    ),
    k(
        "SSS_BOOT_ADDR",
        "(the address that routes to the first host)",
        "an IP address",
        "where the ssh spawner's rendezvous listens",
        Launcher,
    ),
    k(
        "SSS_STALL_PROBE_SECS",
        "(unset)",
        "seconds",
        "sss-idm-probe: keep operating for this long (stall tests)",
        Daemon,
    ),
    k(
        "SSS_MPICC",
        "cc",
        "a C compiler command",
        "the compiler sss mpicc runs",
        Launcher,
    ),
    k(
        "SSS_MPICXX",
        "c++",
        "a C++ compiler command",
        "the compiler sss mpicxx runs",
        Launcher,
    ),
    k(
        "SSS_MPIF90",
        "gfortran",
        "a Fortran compiler command",
        "the compiler sss mpif90 runs (gfortran 10+ gets -fallow-argument-mismatch)",
        Launcher,
    ),
    k(
        "SSS_CC",
        "clang-16",
        "a clang command of the LLVM the pass is built for",
        "the compiler sss cc runs with the RCOP pass",
        Launcher,
    ),
    k(
        "SSS_CXX",
        "clang++-16",
        "a clang++ command",
        "the compiler sss c++ runs with the RCOP pass",
        Launcher,
    ),
    k(
        "SSS_LLVM_CONFIG",
        "llvm-config-16",
        "an llvm-config command",
        "the LLVM the RCOP pass is built against",
        Launcher,
    ),
    k(
        "SSS_RCOP_OPT",
        "mb,ia",
        "no, mb, ia, bo, all, or a list such as mb,ia,bo; udsm added by --udsm",
        "the RCOP pass's optimization and mode (sss cc sets it from -fsss-opt= and --udsm)",
        Launcher,
    ),
    k(
        "SSS_RCOP_STATS",
        "unset",
        "1 or unset",
        "the RCOP pass reports what it instrumented",
        Launcher,
    ),
    k(
        "SSS_MPI_INCLUDE",
        "(beside sss: the prefix's or the repository's include/)",
        "a directory",
        "where sss mpicc finds mpi.h (with SSS_MPI_LIBDIR)",
        Launcher,
    ),
    k(
        "SSS_MPI_LIBDIR",
        "(beside sss)",
        "a directory",
        "where sss mpicc finds libmpi (with SSS_MPI_INCLUDE)",
        Launcher,
    ),
    secret(
        "SSS_CLUSTER_SECRET",
        "key of the node daemons' gossip (else --secret-file or ~/.config/sss/cluster.key)",
        Daemon,
    ),
    k(
        "SSS_JOB",
        "(set by the launcher)",
        "a number",
        "job id",
        Bootstrap,
    ),
    k(
        "SSS_RANK",
        "(set by the launcher)",
        "a number below SSS_SIZE",
        "this task's rank",
        Bootstrap,
    ),
    k(
        "SSS_SIZE",
        "(set by the launcher)",
        "a number",
        "tasks in the job",
        Bootstrap,
    ),
    k(
        "SSS_NODE",
        "(set by the launcher)",
        "a host address or name",
        "this task's node",
        Bootstrap,
    ),
    k(
        "SSS_NODE_ID",
        "(set by the launcher)",
        "a number",
        "index of the node in the host list",
        Bootstrap,
    ),
    k(
        "SSS_LOCAL_RANK",
        "(set by the launcher)",
        "a number",
        "rank among the node's tasks",
        Bootstrap,
    ),
    k(
        "SSS_LOCAL_SIZE",
        "(set by the launcher)",
        "a number",
        "tasks on the node",
        Bootstrap,
    ),
    k(
        "SSS_BOOT",
        "(set by the launcher)",
        "tcp:HOST:PORT or file:/dir",
        "the rendezvous",
        Bootstrap,
    ),
    k(
        "SSS_BOOT_TIMEOUT",
        "120",
        "seconds",
        "how long the rendezvous waits for every task",
        Bootstrap,
    ),
    k(
        "SSS_BOOT_DIR",
        "/tmp",
        "a directory",
        "base of the file rendezvous under foreign launchers",
        Bootstrap,
    ),
    k(
        "SSS_BOOT_KEY",
        "(from the launcher's job id)",
        "text",
        "job key under foreign launchers",
        Bootstrap,
    ),
    secret(
        "SSS_JOB_SECRET",
        "the job's secret (keys of sealed datagrams, the rendezvous' HELLO)",
        Bootstrap,
    ),
];

/// The setting named `name`.
pub fn lookup(name: &str) -> Option<&'static Known> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The known setting nearest to `name` (a misspelling's likely intent),
/// if one is close.
pub fn nearest(name: &str) -> Option<&'static Known> {
    SETTINGS
        .iter()
        .map(|s| (distance(s.name, name), s))
        .filter(|(d, _)| *d <= 3)
        .min_by_key(|(d, _)| *d)
        .map(|(_, s)| s)
}

/// The variables among `names` that look like a misspelt setting: an
/// `SSS_` name no setting has, within a few letters of one. Each comes
/// with the line a task prints about it. Names far from every setting
/// (other programs' variables) are left alone.
pub fn misspelt<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| n.starts_with("SSS_") && lookup(n).is_none())
        .filter_map(|n| {
            nearest(n).map(|k| {
                format!(
                    "{n} is not a setting and is ignored; did you mean {}?",
                    k.name
                )
            })
        })
        .collect()
}

/// Levenshtein distance (names are short).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_misspellings_find_their_setting() {
        for (i, s) in SETTINGS.iter().enumerate() {
            assert!(s.name.starts_with("SSS_"));
            assert!(
                SETTINGS[i + 1..].iter().all(|t| t.name != s.name),
                "{} twice",
                s.name
            );
        }
        assert_eq!(nearest("SSS_SPINUS").map(|s| s.name), Some("SSS_SPIN_US"));
        assert_eq!(
            nearest("SSS_DSM_PROTOCL").map(|s| s.name),
            Some("SSS_DSM_PROTOCOL")
        );
        assert!(nearest("SSS_SOMETHING_ELSE_ENTIRELY").is_none());
        assert_eq!(
            misspelt(["SSS_SPINUS", "SSS_SPIN_US", "SSS_ATTACK_CHILD", "HOME"]),
            ["SSS_SPINUS is not a setting and is ignored; did you mean SSS_SPIN_US?"]
        );
    }

    /// Every `SSS_*` variable the sources read outside tests is listed, so
    /// `sss info` shows all of them.
    #[test]
    fn every_variable_the_sources_read_is_listed() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut missing = Vec::new();
        let mut stack = vec![root.join("crates")];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if p.is_dir() {
                    if name != "tests" && name != "target" {
                        stack.push(p);
                    }
                    continue;
                }
                // Test programs (sss-test-task) read their own variables.
                if !name.ends_with(".rs") || name.contains("test") {
                    continue;
                }
                let text = std::fs::read_to_string(&p).unwrap_or_default();
                // Only the code before a file's unit tests.
                let code = text.split("#[cfg(test)]").next().unwrap_or("");
                for read in ["var(\"", "var_os(\"", "raw(\"", "number(\"", "env(\""] {
                    for part in code.split(read).skip(1) {
                        let var: String = part
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        if var.starts_with("SSS_") && lookup(&var).is_none() {
                            missing.push(format!("{var} ({})", p.display()));
                        }
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not in SETTINGS: {missing:?}");
    }
}
