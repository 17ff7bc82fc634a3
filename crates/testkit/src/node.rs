//! Jobs made by hand: node daemons (`sssd`) and tasks started with the
//! variables a launcher would set, meeting at a boot server of the test's
//! own.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

/// `sssd` at `exe` for `node` among `peers`, gossiping on `port`, with a
/// silence limit of `down_ms`.
pub fn sssd(exe: impl AsRef<Path>, node: &str, peers: &[&str], port: u16, down_ms: u64) -> Command {
    let mut cmd = Command::new(exe.as_ref());
    cmd.args(["--node", node, "--peers", &peers.join(","), "--port"])
        .arg(port.to_string())
        .args(["--down-ms", &down_ms.to_string()]);
    cmd
}

/// A task's place in a hand-made job: the variables a launcher sets.
pub struct TaskEnv<'a> {
    /// `SSS_JOB`.
    pub job: u32,
    /// `SSS_RANK`.
    pub rank: usize,
    /// `SSS_SIZE`.
    pub size: usize,
    /// `SSS_NODE`.
    pub node: &'a str,
    /// `SSS_NODE_ID`.
    pub node_id: usize,
    /// `SSS_LOCAL_RANK`.
    pub local_rank: usize,
    /// `SSS_LOCAL_SIZE`.
    pub local_size: usize,
    /// `SSS_BOOT`: `tcp:` and the boot server's address.
    pub boot: SocketAddr,
}

impl TaskEnv<'_> {
    /// Sets the variables on `cmd`.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env("SSS_JOB", self.job.to_string())
            .env("SSS_RANK", self.rank.to_string())
            .env("SSS_SIZE", self.size.to_string())
            .env("SSS_NODE", self.node)
            .env("SSS_NODE_ID", self.node_id.to_string())
            .env("SSS_LOCAL_RANK", self.local_rank.to_string())
            .env("SSS_LOCAL_SIZE", self.local_size.to_string())
            .env("SSS_BOOT", format!("tcp:{}", self.boot))
            .env("SSS_JOB_SECRET", test_secret(self.job))
    }
}

/// The job secret of a hand-made job (its tasks seal their datagrams with
/// keys derived from it): fixed per job id, which is fine for tests and
/// nothing else.
pub fn test_secret(job: u32) -> String {
    format!("{job:08x}").repeat(8)
}

/// Rank `rank` of `size` tasks, one on each node (node id = rank), its
/// node `node`, meeting at the boot server `boot`.
pub fn one_per_node(
    job: u32,
    rank: usize,
    size: usize,
    node: &str,
    boot: SocketAddr,
) -> TaskEnv<'_> {
    TaskEnv {
        job,
        rank,
        size,
        node,
        node_id: rank,
        local_rank: 0,
        local_size: 1,
        boot,
    }
}
