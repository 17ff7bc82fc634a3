//! MBCF's reliable transport as sans-IO state machines.
//!
//! An [`Endpoint`] is one task's end of MBCF: a reliable channel per peer
//! task plus the multicast trees the task takes part in. It owns no socket,
//! thread or clock. The caller feeds it datagrams and the time, and drains
//! datagrams to send, the next timer and completion events:
//!
//! ```text
//!   submit()/multicast() ──► Endpoint ──► poll_transmit()  ──► network
//!   network ──► handle_datagram(now, bytes, &mut target)
//!                  └─► target.apply(packet)   (incoming operations, in order)
//!   clock   ──► handle_timeout(now)  when now ≥ poll_timeout()
//!   poll_event() ──► completions, peer failures
//! ```
//!
//! Call order: after any `submit*`, `handle_datagram` or `handle_timeout`,
//! drain `poll_transmit` until it returns `None`, drain `poll_event`, then
//! sleep until `poll_timeout` or the next datagram. Time never goes
//! backwards across calls.
//!
//! # Guarantees
//!
//! - **Exactly once, in order.** Reliable operations from one task to
//!   another reach [`Target::apply`] exactly once each and in issue order,
//!   whatever the network loses, duplicates, reorders or corrupts. Sequence
//!   numbers make duplicates harmless, so non-idempotent operations (SWAP,
//!   CAS, FETCH_ADD, FIFO, SIGNAL) are safe.
//! - **Acks.** The receiver acknowledges cumulatively, piggybacked on any
//!   packet going back or in a delayed ACK, with selective-ack blocks for
//!   packets past a hole. The sender retransmits from its own copy: a
//!   packet once a packet sent after it was acknowledged and a reordering
//!   allowance passed (RACK); the allowance widens when the receiver
//!   reports a duplicate of such a packet (D-SACK). When the retransmission timer (RFC 6298
//!   estimator, Karn's rule, exponential back-off reset by any ack of new
//!   data) fires, only the oldest unacknowledged packet goes again (or a
//!   probe, when only replies are owed); the first ack of new data after
//!   it marks the rest of what was sent before the timeout lost, and that
//!   goes again then, unless it acknowledges a packet sent only once
//!   before the timeout (a spurious timeout). A timeout never resends the
//!   whole window.
//! - **Back-pressure.** At most [`Config::window`] packets and
//!   [`Config::ooo_bytes`] bytes are in flight per peer, and at most
//!   [`Config::send_buffer`] bytes wait per peer; past that, submit
//!   returns [`SubmitError::WouldBlock`] and nothing is queued.
//! - **Failure.** A peer that acknowledges nothing through
//!   [`Config::max_retries`] consecutive timeouts is declared down: every
//!   pending operation to it completes with [`Status::NodeDown`], an
//!   [`Event::PeerDown`] is raised, and later submits fail at once.
//! - **Recovery.** A peer declared down is not dead for good: a stall (a
//!   stopped process, a paused machine, a partition) looks the same. The
//!   channel keeps its stream: the requests it failed become fillers (ACKs
//!   with a sequence number, which take their place and carry nothing) and
//!   its replies stay, so the peer finds nothing missing when it returns.
//!   Meanwhile it sends only probes, at growing intervals
//!   ([`Config::down_probe`]). Any packet from the peer brings the channel
//!   back ([`Event::PeerUp`]) and resends what is unacknowledged. A peer
//!   that restarted shows a new epoch instead, and the channel starts
//!   afresh.
//! - **Fragmentation.** WRITEs and READ replies longer than
//!   [`Config::payload_size`] travel as consecutive fragments; WRITE
//!   fragments are applied where they land (no reassembly copy at the
//!   receiver), READ data is reassembled at the origin.
//! - **No flow control.** Operations with [`OpOptions::nofc`] are sent once,
//!   unsequenced, never retransmitted and not ordered.
//! - **Multicast.** A group WRITE goes to the first receiver, which forwards
//!   it down a k-ary tree (a chain for small groups); each member combines
//!   its subtree's acks with its own, so exactly one combined ack reaches
//!   the origin.

#![forbid(unsafe_code)]

mod endpoint;
mod reorder;
mod rtt;

pub use endpoint::Endpoint;

#[cfg(test)]
mod config_tests {
    use super::*;

    #[test]
    fn validation_names_the_field_and_clamping_fixes_it() {
        assert_eq!(Config::default().validate(), Ok(()));
        let bad = Config {
            max_rto: 0,
            ..Config::default()
        };
        assert_eq!(bad.validate().unwrap_err().field, "max_rto");
        let bad = Config {
            min_rto: 300_000_000,
            ..Config::default()
        };
        let e = bad.validate().unwrap_err();
        assert_eq!((e.field, e.max), ("min_rto", 200_000_000));
        let wild = Config {
            payload_size: 0,
            window: 0,
            min_rto: u64::MAX,
            max_rto: 0,
            initial_rto: u64::MAX,
            ack_delay: u64::MAX,
            nofc_reply_timeout: u64::MAX,
            multicast_arity: 0,
            ..Config::default()
        };
        assert_eq!(wild.clamped().validate(), Ok(()));
    }
}
pub use sss_wire::{Body, Format, Frag, Notify, Packet, Status, TaskId};

/// Time in nanoseconds from an origin the caller picks (virtual time in
/// simulations, a monotonic clock in the runtime).
pub type Time = u64;

/// Tunables of an [`Endpoint`]. Times are nanoseconds.
#[derive(Debug, Clone)]
pub struct Config {
    /// Payload bytes per packet (fragment size).
    pub payload_size: usize,
    /// Packets in flight per peer (also the receiver's reorder buffer).
    pub window: u32,
    /// Bytes of payload that may wait per peer, sent or not, before submit
    /// pushes back. An operation larger than this is accepted only when
    /// nothing else waits.
    pub send_buffer: usize,
    /// Retransmission timeout before any round trip was measured.
    pub initial_rto: Time,
    /// Lower bound of the retransmission timeout.
    pub min_rto: Time,
    /// Upper bound of the retransmission timeout after back-off.
    pub max_rto: Time,
    /// Consecutive timeouts without progress before the peer is down.
    pub max_retries: u32,
    /// Longest an acknowledgement is held back hoping to piggyback it.
    pub ack_delay: Time,
    /// Acknowledge at once after this many unacknowledged packets.
    pub ack_every: u32,
    /// Largest READ accepted, in bytes.
    pub max_read: u32,
    /// Largest FIFO message, in bytes: one larger than a packet's payload
    /// is cut into fragments the receiver joins (one message in the
    /// making per peer) before it reaches the queue.
    pub max_fifo: usize,
    /// Fan-out of multicast trees.
    pub multicast_arity: u8,
    /// Groups with at most this many receivers use a chain instead.
    pub chain_threshold: usize,
    /// How long a no-flow-control operation waits for its reply (one that
    /// asked for none still gets its NACK reported until then, once).
    pub nofc_reply_timeout: Time,
    /// This endpoint's incarnation; must grow when a task restarts.
    pub epoch: u32,
    /// Most peers tracked at once; packets from further peers are dropped.
    pub max_peers: usize,
    /// First interval between probes of a peer declared down; it doubles
    /// up to [`Config::down_probe_max`]. A peer that answers comes back.
    pub down_probe: Time,
    /// Longest interval between probes of a peer declared down.
    pub down_probe_max: Time,
    /// Tasks of this endpoint's job: when set, datagrams from another job
    /// or a rank at or past it are dropped before any state is created
    /// for them ([`Stats::not_member`]). `None` accepts any source.
    pub members: Option<u32>,
    /// Bytes of datagrams past a hole held per peer; further ones are
    /// dropped unacknowledged ([`Stats::reorder_dropped`]) and come again.
    /// Also the most bytes in flight toward a peer (its budget is taken to
    /// be the same), so that one loss never costs more than itself.
    pub ooo_bytes: usize,
    /// Bytes held in out-of-order buffers over all peers.
    pub ooo_total: usize,
    /// The datagram format emitted and accepted. A sealed format leaves
    /// the tag to the caller: it seals what `poll_transmit` gives and
    /// opens what it hands `handle_datagram` (see `sss-seal`).
    pub format: Format,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            payload_size: sss_wire::DEFAULT_PAYLOAD,
            window: 1024,
            send_buffer: 8 << 20,
            initial_rto: 10_000_000,
            min_rto: 2_000_000,
            max_rto: 200_000_000,
            max_retries: 12,
            ack_delay: 200_000,
            ack_every: 8,
            max_read: 64 << 20,
            max_fifo: MAX_FIFO,
            multicast_arity: 4,
            chain_threshold: 4,
            nofc_reply_timeout: 100_000_000,
            epoch: 1,
            max_peers: 1 << 16,
            down_probe: 250_000_000,
            down_probe_max: 4_000_000_000,
            members: None,
            ooo_bytes: 512 << 10,
            ooo_total: 64 << 20,
            format: Format::Checksummed,
        }
    }
}

/// Longest time setting a [`Config`] may hold (one hour): timers add it to
/// the clock, which must not overflow.
pub const MAX_TIME_SETTING: Time = 3_600_000_000_000;

/// Largest payload per packet: a datagram of it and the header fits UDP.
pub const MAX_PAYLOAD: usize = 65_000;

/// Largest [`Config::max_fifo`].
pub const MAX_FIFO: usize = 64 << 10;

/// Largest window: sequence numbers are compared within half their
/// 32-bit space.
pub const MAX_WINDOW: u32 = 1 << 20;

/// A [`Config`] field outside its range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value} is outside {min}..={max}")]
pub struct ConfigError {
    /// The field.
    pub field: &'static str,
    /// Its value.
    pub value: u64,
    /// Smallest value allowed.
    pub min: u64,
    /// Largest value allowed.
    pub max: u64,
}

impl Config {
    /// Checks every field against its range, and `min_rto <= max_rto`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let check = |field, value: u64, min: u64, max: u64| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(ConfigError {
                    field,
                    value,
                    min,
                    max,
                })
            }
        };
        let t = MAX_TIME_SETTING;
        check(
            "payload_size",
            self.payload_size as u64,
            1,
            MAX_PAYLOAD as u64,
        )?;
        check("window", self.window.into(), 1, MAX_WINDOW.into())?;
        check("max_fifo", self.max_fifo as u64, 0, MAX_FIFO as u64)?;
        check("max_rto", self.max_rto, 1, t)?;
        check("min_rto", self.min_rto, 1, self.max_rto)?;
        check("initial_rto", self.initial_rto, 1, t)?;
        check("ack_delay", self.ack_delay, 0, t)?;
        check("nofc_reply_timeout", self.nofc_reply_timeout, 0, t)?;
        check("multicast_arity", self.multicast_arity.into(), 1, 255)?;
        check("down_probe", self.down_probe, 1, t)?;
        check("down_probe_max", self.down_probe_max, self.down_probe, t)?;
        Ok(())
    }

    /// This configuration with every field forced into its range, so that
    /// an endpoint built from anything stays well defined.
    fn clamped(mut self) -> Self {
        let t = MAX_TIME_SETTING;
        self.payload_size = self.payload_size.clamp(1, MAX_PAYLOAD);
        self.window = self.window.clamp(1, MAX_WINDOW);
        self.max_fifo = self.max_fifo.min(MAX_FIFO);
        self.max_rto = self.max_rto.clamp(1, t);
        self.min_rto = self.min_rto.clamp(1, self.max_rto);
        self.initial_rto = self.initial_rto.clamp(1, t);
        self.ack_delay = self.ack_delay.min(t);
        self.nofc_reply_timeout = self.nofc_reply_timeout.min(t);
        self.down_probe = self.down_probe.clamp(1, t);
        self.down_probe_max = self.down_probe_max.clamp(self.down_probe, t);
        self.multicast_arity = self.multicast_arity.max(1);
        self
    }
}

/// An operation to submit. Borrowed data is copied before submit returns,
/// so the caller's buffer may be reused at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// Store `data` at `addr`; with `notify`, bump a counter after it.
    Write {
        /// Target segment key.
        key: u64,
        /// Target address.
        addr: u64,
        /// Bytes to store.
        data: &'a [u8],
        /// Counter bumped after the data is stored.
        notify: Option<Notify>,
    },
    /// Fetch `len` bytes at `addr`.
    Read {
        /// Source segment key.
        key: u64,
        /// Source address.
        addr: u64,
        /// Bytes to fetch.
        len: u32,
    },
    /// Atomically store `operand`, returning the old value.
    Swap {
        /// Segment key.
        key: u64,
        /// 8-byte aligned address.
        addr: u64,
        /// New value.
        operand: u64,
    },
    /// Atomically replace `expected` by `new`, returning the old value.
    Cas {
        /// Segment key.
        key: u64,
        /// 8-byte aligned address.
        addr: u64,
        /// Value compared against.
        expected: u64,
        /// Value stored on a match.
        new: u64,
    },
    /// Atomically add `operand`, returning the old value.
    FetchAdd {
        /// Segment key.
        key: u64,
        /// 8-byte aligned address.
        addr: u64,
        /// Addend (wrapping).
        operand: u64,
    },
    /// Push `data` into the FIFO queue at `addr`.
    Fifo {
        /// Segment key.
        key: u64,
        /// Address of the queue.
        addr: u64,
        /// Message.
        data: &'a [u8],
    },
    /// Run handler `handler` with `data`.
    Signal {
        /// Key of the receiver's signal table.
        key: u64,
        /// Handler index.
        handler: u32,
        /// Payload passed to the handler.
        data: &'a [u8],
    },
}

impl Op<'_> {
    fn payload_len(&self) -> usize {
        match self {
            Op::Write { data, .. } | Op::Fifo { data, .. } | Op::Signal { data, .. } => data.len(),
            _ => 0,
        }
    }

    /// True when the operation always gets a reply (READ and atomics).
    fn has_reply(&self) -> bool {
        matches!(
            self,
            Op::Read { .. } | Op::Swap { .. } | Op::Cas { .. } | Op::FetchAdd { .. }
        )
    }
}

/// Per-operation options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpOptions {
    /// Ask for a completion event once the operation was applied remotely.
    /// Errors are always reported, with or without this.
    pub status_return: bool,
    /// Send once, unsequenced, without retransmission or ordering.
    pub nofc: bool,
}

/// Identifies a submitted operation: the peer and the sequence number of
/// its first packet (a per-endpoint counter for no-flow-control ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpId {
    /// Destination task.
    pub peer: TaskId,
    /// Wire operation id.
    pub id: u32,
    /// True for no-flow-control operations (a separate id space).
    pub nofc: bool,
}

/// Identifies a multicast started here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct McastId {
    /// Group.
    pub group: u32,
    /// Per-endpoint multicast counter.
    pub id: u32,
}

/// What a successful operation returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// Applied (WRITE, FIFO, SIGNAL with status return).
    Done,
    /// The old value of an atomic.
    Value(u64),
    /// The bytes of a READ.
    Data(Vec<u8>),
}

/// Something the caller should know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// An operation finished: successfully if it asked for a reply, or with
    /// an error status in any case.
    Completed {
        /// The operation.
        op: OpId,
        /// Its outcome.
        result: Result<Completion, Status>,
    },
    /// A multicast finished: `members` receivers applied it; `status` is the
    /// worst outcome seen in the tree.
    Multicast {
        /// The multicast.
        mcast: McastId,
        /// Receivers that applied the write.
        members: u32,
        /// Combined status.
        status: Status,
    },
    /// The peer stopped answering within the retry budget, or was
    /// declared down.
    PeerDown {
        /// The peer.
        peer: TaskId,
    },
    /// A peer that was down answered again: its channel resumed, and new
    /// operations to it are accepted. What failed while it was down stays
    /// failed.
    PeerUp {
        /// The peer.
        peer: TaskId,
    },
}

/// What [`Target::apply`] did with an incoming operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Applied (WRITE, FIFO, SIGNAL, MULTICAST).
    Done,
    /// Applied; the old value of an atomic.
    Value(u64),
    /// The bytes a READ asked for.
    Data(Vec<u8>),
    /// Rejected and not applied.
    Failed(Status),
}

/// The receiver side: applies incoming operations to memory. Called from
/// [`Endpoint::handle_datagram`], in order per source, exactly once per
/// operation (per fragment for fragmented WRITEs).
pub trait Target {
    /// Checks and applies one incoming request packet (`packet.body` is a
    /// request kind; for MULTICAST, `packet.src` is the forwarding parent
    /// and the origin is in the body).
    fn apply(&mut self, packet: &Packet<'_>) -> Outcome;
}

/// Why an operation was not accepted. Nothing was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The send window and buffer toward this peer are full; retry after
    /// some completions (poll and handle incoming datagrams).
    #[error("send buffer full")]
    WouldBlock,
    /// The peer was declared down.
    #[error("peer is down")]
    PeerDown,
    /// The operation cannot be carried (size, alignment or option
    /// combination).
    #[error("operation too large or malformed")]
    Invalid,
    /// No such multicast group is registered here.
    #[error("unknown multicast group")]
    UnknownGroup,
    /// Too many peers.
    #[error("too many peers")]
    TooManyPeers,
}

/// Round-trip state of the channel with one peer, for monitoring and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathInfo {
    /// Smoothed round trip (the initial timeout before any sample).
    pub srtt: Time,
    /// Retransmission timeout in force, back-off included.
    pub rto: Time,
    /// Back-off exponent: timeouts since the last acknowledged progress.
    pub backoff: u32,
}

/// Counters of one endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Datagrams handed out by `poll_transmit`.
    pub packets_sent: u64,
    /// Bytes handed out by `poll_transmit`.
    pub bytes_sent: u64,
    /// Datagrams given to `handle_datagram`.
    pub packets_received: u64,
    /// Bytes given to `handle_datagram`.
    pub bytes_received: u64,
    /// Retransmitted data packets.
    pub retransmissions: u64,
    /// Retransmission timeouts that fired with data unacknowledged.
    pub timeouts: u64,
    /// Packets presumed lost by RACK: a packet sent after them was
    /// acknowledged and they were older than its round trip plus the
    /// reordering allowance.
    pub rack_lost: u64,
    /// Packets presumed lost because they were unacknowledged when a
    /// timeout fired and the first ack after it showed the path working.
    pub timeout_lost: u64,
    /// Timeouts found spurious: the first ack after one acknowledged a
    /// packet sent only once, before it (nothing more was resent).
    pub spurious_timeouts: u64,
    /// Duplicates the peer reported (D-SACK blocks): retransmissions that
    /// were not needed. Each widens RACK's reordering allowance.
    pub dsacks: u64,
    /// Copies of large operations (WRITE payloads, READ replies) made
    /// into a pooled buffer filled before, mapped and warm, instead of
    /// fresh pages.
    pub pooled_reuses: u64,
    /// Pure ACK packets sent.
    pub acks_sent: u64,
    /// Received packets dropped as duplicates.
    pub duplicates: u64,
    /// Received packets dropped as malformed or corrupted.
    pub bad_packets: u64,
    /// Received packets addressed to another task.
    pub misdelivered: u64,
    /// Packets dropped because they came from an old incarnation.
    pub stale: u64,
    /// Packets dropped because they lay past the receive window.
    pub out_of_window: u64,
    /// Incoming operations rejected by the target (answered with a NACK).
    pub rejected: u64,
    /// Requests applied.
    pub applied: u64,
    /// No-flow-control packets sent.
    pub nofc_sent: u64,
    /// Combined multicast acks that reached this endpoint as origin.
    pub mcast_acks: u64,
    /// Peers that were down and answered again.
    pub recoveries: u64,
    /// Received packets dropped because their source is not a member of
    /// the job, or not the task the datagram came from.
    pub not_member: u64,
    /// Out-of-order packets dropped over the reorder buffer's budget.
    pub reorder_dropped: u64,
    /// Channels whose timers [`Endpoint::handle_timeout`] ran: only those
    /// with a deadline due are visited, however many peers are idle.
    pub timer_visits: u64,
}
