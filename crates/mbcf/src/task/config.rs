//! A task's tunables ([`TaskConfig`]) and their defaults; reading them
//! from the environment is in `settings.rs`.

use sss_proto::Config;
use sss_seal::Security;
use std::time::Duration;

/// Tunables of a task, read from the environment by [`TaskConfig::from_env`]
/// (in `settings.rs`).
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// Protocol tunables.
    pub proto: Config,
    /// How long a waiter spins at least before it blocks (`SSS_SPIN_US`,
    /// default 50); 0 blocks at once.
    pub spin: Duration,
    /// How long a waiter spins at most (`SSS_SPIN_MAX_US`, default 250):
    /// waits that blocked and were answered soon after lengthen the spin
    /// up to this, long waits shorten it again.
    pub spin_max: Duration,
    /// Socket buffer size in bytes (`SSS_SOCKBUF`, default 4 MiB).
    pub sockbuf: i32,
    /// Transport choice (`SSS_TRANSPORT=auto|udp|shm`).
    pub transport: Transport,
    /// Fault injection: fraction of outgoing udp datagrams dropped
    /// (`SSS_FAULT_DROP`, default 0).
    pub fault_drop: f64,
    /// Fault injection: fraction of outgoing udp datagrams sent twice
    /// (`SSS_FAULT_DUP`, default 0).
    pub fault_dup: f64,
    /// SS-Wait policy constants.
    pub sswait: SsWaitTuning,
    /// CPU binding of the task (`SSS_BIND=auto|core|none`).
    pub bind: Bind,
    /// Protection of udp datagrams (`SSS_SECURITY=auth|encrypt|none`,
    /// default `auth`). Every task of a job must use the same.
    pub security: Security,
    /// Size datagrams to the routes (default): at join, `proto.payload_size`
    /// becomes the largest payload whose datagram fits the smallest MTU
    /// of the routes to the task's udp peers, at most a jumbo frame's
    /// ([`JUMBO_MTU`]). `SSS_PAYLOAD` sets a size and turns this off.
    pub route_payload: bool,
}

/// The largest frame [`TaskConfig::route_payload`] fills: an Ethernet
/// jumbo frame. Routes with a larger MTU (loopback, IPoIB) gain little
/// more per byte, and one lost datagram should not cost more than this.
pub const JUMBO_MTU: usize = 9000;

/// The payload of a datagram that fills a frame of `mtu` bytes exactly
/// (IP and UDP headers, our header, the payload and, when sealed, the
/// tag), for routes up to [`JUMBO_MTU`]; never below what a 576-byte
/// frame (the smallest every IPv4 route carries) holds.
pub fn payload_for_mtu(mtu: usize, ipv6: bool, security: Security) -> usize {
    let ip_udp = if ipv6 { 48 } else { 28 };
    let tag = match security {
        Security::None => 0,
        Security::Auth | Security::Encrypt => sss_seal::TAG_LEN,
    };
    let over = ip_udp + sss_wire::HEADER_LEN + tag;
    mtu.clamp(576, JUMBO_MTU) - over
}

/// Whether a task binds itself to one CPU when it joins its job.
///
/// Bound tasks take CPUs round robin by their rank among the job's tasks
/// on the node: the k-th task on the node gets the k-th CPU it may use
/// (modulo their number), so neighbours in rank order sit on different
/// CPUs. Under oversubscription this is what makes SS-Wait's wake-ups
/// cheap: a task blocked two hand-overs away is woken by a task on its
/// own CPU (no inter-processor interrupt), and the kernel does not move
/// tasks between CPUs in the middle of a hand-over. The binding applies
/// to the thread that joins and to the threads it starts later (the
/// progress thread among them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bind {
    /// Bind when the job's own tasks on the node outnumber the CPUs the
    /// task may use; leave placement to the kernel otherwise.
    #[default]
    Auto,
    /// Always bind.
    Core,
    /// Never bind.
    None,
}

/// SS-Wait's policy constants ([`Task::sswait`](super::Task::sswait)), read once when the task
/// starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SsWaitTuning {
    /// Longest stretch spun (partner running, CPUs to spare) before the
    /// partner and the node are looked at again (`SSS_SSWAIT_SPIN_US`,
    /// default 2000).
    pub spin: Duration,
    /// Longest block before the waiter looks again
    /// (`SSS_SSWAIT_BLOCK_US`, default 5000).
    pub block: Duration,
    /// Yields before blocking while the partner is blocked itself
    /// (`SSS_SSWAIT_YIELDS`, default 32): it needs a wake-up before it can
    /// answer, so our flag is not imminent.
    pub yields: u32,
    /// Longest stretch of yielding on an oversubscribed node while the
    /// partner is not blocked, before blocking anyway
    /// (`SSS_SSWAIT_YIELD_US`, default 1000): bounds what a waiter costs
    /// others while its partner computes.
    pub yield_for: Duration,
    /// CPUs SS-Wait counts when it judges oversubscription
    /// (`SSS_SSWAIT_CPUS`; default: the CPUs the task could use when it
    /// started). Fewer keeps CPUs free for other work; also for tests.
    pub cpus: Option<usize>,
}

impl Default for SsWaitTuning {
    fn default() -> Self {
        Self {
            spin: Duration::from_micros(2000),
            block: Duration::from_micros(5000),
            yields: 32,
            yield_for: Duration::from_micros(1000),
            cpus: None,
        }
    }
}

/// Which transport carries operations to a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// `shm` for tasks on the same node, `udp` for the others.
    #[default]
    Auto,
    /// `udp` for everyone, even on one node.
    Udp,
}

/// The payload per datagram when `SSS_PAYLOAD` is not set: a full
/// datagram then fills a 1500-byte Ethernet frame exactly (IP and UDP
/// headers, our header, the payload and, when sealed, the 16-byte tag),
/// so it is never split into IP fragments.
pub fn default_payload(security: Security) -> usize {
    match security {
        Security::None => sss_wire::DEFAULT_PAYLOAD,
        Security::Auth | Security::Encrypt => sss_wire::DEFAULT_PAYLOAD - sss_seal::TAG_LEN,
    }
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            proto: Config {
                payload_size: default_payload(Security::Auth),
                ..Config::default()
            },
            spin: Duration::from_micros(50),
            spin_max: Duration::from_micros(250),
            sockbuf: 4 << 20,
            transport: Transport::Auto,
            fault_drop: 0.0,
            fault_dup: 0.0,
            sswait: SsWaitTuning::default(),
            bind: Bind::Auto,
            security: Security::Auth,
            route_payload: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sswait_tuning_comes_from_the_environment_once() {
        let d = TaskConfig::default().sswait;
        assert_eq!(d.yields, 32);
        assert_eq!(d.yield_for, Duration::from_micros(1000));
        assert_eq!(d.spin, Duration::from_micros(2000));
        assert_eq!(d.block, Duration::from_micros(5000));
        assert_eq!(d.cpus, None);
    }

    #[test]
    fn a_full_datagram_fills_the_routes_frame() {
        let auth = Security::Auth;
        // Ethernet: the payload every task used before routes were asked.
        assert_eq!(payload_for_mtu(1500, false, auth), default_payload(auth));
        assert_eq!(
            payload_for_mtu(1500, false, Security::None),
            default_payload(Security::None)
        );
        assert_eq!(payload_for_mtu(9000, false, auth), 9000 - 28 - 64 - 16);
        assert_eq!(payload_for_mtu(9000, true, auth), 9000 - 48 - 64 - 16);
        // Loopback's 64 KiB: a jumbo frame at most.
        assert_eq!(
            payload_for_mtu(65536, false, auth),
            payload_for_mtu(9000, false, auth)
        );
        // A tunnel's smaller MTU is followed; nonsense is not.
        assert_eq!(payload_for_mtu(1400, false, auth), 1400 - 108);
        assert_eq!(payload_for_mtu(0, false, auth), 576 - 108);
    }
}
