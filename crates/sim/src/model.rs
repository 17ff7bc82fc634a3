//! The detailed probabilistic model of seed 003 §3, simulated event by event.
//!
//! Every running thread issues one memory access per clock. Local hits are
//! not simulated one by one: a thread's next non-local access (a private or
//! shared page that is not in its cluster, or a write to a shared page that
//! has other copies) is drawn from a geometric distribution whose rate is
//! the access-frequency mass of those pages. Since only the thread running
//! on a cluster changes what that cluster holds, the rate is constant
//! between the thread's own events, so the sampling is exact.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::config::{Params, Policy, Replacement, RunSpec, SetSpec};
use crate::sched::{self, AgingInput, Request};
use crate::topology::{Cluster, Msg, Net, Tree};
use crate::workload::{self, ProcSpec, ZipfTables};

const NONE: Cluster = Cluster::MAX;
const SHARED_BIT: u32 = 1 << 31;

/// Processor time by category, in processor-clocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Effective execution (neither page nor synchronisation wait).
    pub effective: u64,
    /// Page processing and communication (page moves, disk, shared-write protocol).
    pub page: u64,
    /// Barrier synchronisation wait.
    pub sync: u64,
    /// Processor allocated to no process.
    pub idle: u64,
}

impl Breakdown {
    /// Sum of all categories.
    pub fn total(&self) -> u64 {
        self.effective + self.page + self.sync + self.idle
    }
    /// Each category as a fraction of the total: effective, page, sync, idle.
    pub fn fractions(&self) -> [f64; 4] {
        let t = self.total().max(1) as f64;
        [
            self.effective as f64 / t,
            self.page as f64 / t,
            self.sync as f64 / t,
            self.idle as f64 / t,
        ]
    }
    fn add(&mut self, o: &Breakdown) {
        self.effective += o.effective;
        self.page += o.page;
        self.sync += o.sync;
        self.idle += o.idle;
    }
}

/// Event counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Events processed.
    pub events: u64,
    /// Pages moved between clusters (private moves and shared copies).
    pub page_moves: u64,
    /// Disk reads.
    pub disk_reads: u64,
    /// Pages evicted.
    pub evictions: u64,
    /// Evictions that found no evictable frame (all under consistency processing).
    pub overcommits: u64,
    /// Shared writes that ran the update protocol.
    pub shared_writes: u64,
    /// Barriers completed.
    pub barriers: u64,
    /// Shared copies dropped because they lay outside a new allocation.
    pub copies_dropped: u64,
    /// Free market: self-migrations.
    pub migrations: u64,
}

/// Result of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// What was run.
    pub spec: RunSpec,
    /// Slices simulated.
    pub slices: u64,
    /// Processor time by category.
    pub time: Breakdown,
    /// Event counts.
    pub counters: Counters,
    /// Effective slices reached by each process (mean over its threads).
    pub proc_effective_slices: Vec<f64>,
    /// Slices in which each process ran.
    pub proc_slices_run: Vec<u64>,
    /// Wall-clock time of the run in seconds (not deterministic).
    pub wall_seconds: f64,
}

impl Outcome {
    /// Simulated processor-clocks per wall-clock second.
    pub fn clocks_per_second(&self) -> f64 {
        self.time.total() as f64 / self.wall_seconds.max(1e-9)
    }
}

/// The next step of a multi-message operation a thread is waiting on.
/// Each step reserves links only from the time it actually happens, so a
/// message queued behind a busy page never holds links it does not yet use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pending {
    /// Nothing: the next event ends the wait.
    None,
    /// A copy request reached `src`; send the page once updates are done.
    SendPage { g: u32, src: Cluster, write: bool },
    /// The copy arrived; now write it.
    ThenWrite { g: u32 },
    /// A write request reached the owner's queue.
    AtOwner { g: u32 },
    /// All acks are in; the owner answers the writer.
    Reply { owner: Cluster },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Running,
    WaitPage,
    WaitSync,
}

#[derive(Debug, Clone)]
struct Thread {
    proc: u32,
    idx: u32,
    cluster: Cluster,
    state: State,
    since: u64,
    /// Effective clocks so far (drives barriers).
    eff: u64,
    /// Index and effective-clock position of the next barrier it is a member of.
    next_barrier: u64,
    next_barrier_eff: u64,
    /// Arrived at a barrier that has not completed.
    in_barrier: bool,
    pending: Pending,
    priv_mass: f64,
    sh_mass: f64,
    /// Bumped to invalidate queued events.
    gen: u32,
    first_private: u32,
}

#[derive(Debug, Clone)]
struct SharedPage {
    copies: [u64; 4],
    n: u16,
    owner: Cluster,
    busy: u64,
    touched: bool,
    proc: u32,
    idx: u32,
}

impl SharedPage {
    fn has(&self, c: Cluster) -> bool {
        self.copies[c as usize >> 6] >> (c & 63) & 1 == 1
    }
    fn set(&mut self, c: Cluster) {
        self.copies[c as usize >> 6] |= 1 << (c & 63);
    }
    fn clear(&mut self, c: Cluster) {
        self.copies[c as usize >> 6] &= !(1 << (c & 63));
    }
    fn first(&self) -> Cluster {
        self.iter().next().unwrap_or(NONE)
    }
    fn iter(&self) -> impl Iterator<Item = Cluster> + '_ {
        (0..4).flat_map(move |w| {
            let mut bits = self.copies[w];
            std::iter::from_fn(move || {
                if bits == 0 {
                    return None;
                }
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                Some((w * 64 + b as usize) as Cluster)
            })
        })
    }
}

#[derive(Debug, Clone, Copy)]
struct Frame {
    page: u32,
    stamp: u64,
}

#[derive(Debug, Clone)]
struct Barrier {
    members: u32,
    arrived: u32,
    root: u32,
    last: u64,
    waiting: Vec<u32>,
}

/// One barrier round of a process: every thread is in exactly one group.
#[derive(Debug, Clone)]
struct Round {
    group_of: Vec<u32>,
    groups: Vec<Barrier>,
    passed: u32,
}

/// splitmix64: a stateless hash so barrier groups and intervals depend only
/// on (seed, process, barrier, thread), not on event order.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn h3(a: u64, b: u64, c: u64) -> u64 {
    mix(mix(mix(a) ^ b) ^ c)
}

/// Stable hash of a label (FNV-1a) for per-run seeds.
pub fn label_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// The state of one simulation.
pub struct Sim {
    params: Params,
    spec: RunSpec,
    net: Net,
    procs: Vec<ProcSpec>,
    threads: Vec<Thread>,
    proc_threads: Vec<u32>,
    zp: ZipfTables,
    zs: ZipfTables,
    // Private pages: location, touched, owner thread, index in thread's space.
    ploc: Vec<Cluster>,
    ptouched: Vec<bool>,
    powner: Vec<u32>,
    pidx: Vec<u32>,
    shared: Vec<SharedPage>,
    proc_shared_base: Vec<u32>,
    frames: Vec<Vec<Frame>>,
    /// pages[proc * clusters + c]: pages of proc on c (copies included).
    pages: Vec<u32>,
    running: Vec<u32>,
    disk_busy: Vec<u64>,
    evictions_slice: Vec<u32>,
    prio: Vec<f64>,
    /// Rank for replacement: 0 = lowest priority.
    prio_rank: Vec<u32>,
    prev: Vec<Vec<Cluster>>,
    rounds: Vec<HashMap<u64, Round>>,
    heap: BinaryHeap<Reverse<(u64, u64, u32, u32)>>,
    seq: u64,
    rng: ChaCha8Rng,
    seed: u64,
    time: Breakdown,
    counters: Counters,
    proc_slices_run: Vec<u64>,
    /// Free market: each process's chosen clusters (per thread).
    residence: Vec<Vec<Cluster>>,
    saturated: Vec<bool>,
    slices_done: u64,
}

impl Sim {
    /// Set up a run: processes built from Table 3, nothing resident yet.
    pub fn new(spec: RunSpec, params: Params) -> Sim {
        let set = SetSpec::table3(spec.set);
        let procs = workload::build(&set, &params);
        let tree = Tree::new(spec.network.fanouts());
        let net = Net::new(
            tree,
            params.network_planes,
            &params.link_multipliers,
            params.comm_cost,
            params.page_move_cost,
        );
        let n = params.processors;
        let mut threads = Vec::new();
        let mut proc_threads = Vec::new();
        let (mut ploc, mut ptouched, mut powner, mut pidx) = (vec![], vec![], vec![], vec![]);
        let mut shared = Vec::new();
        let mut proc_shared_base = Vec::new();
        let mut max_n = 1;
        let seed = mix(spec.seed ^ label_hash(&spec.label()));
        for (i, p) in procs.iter().enumerate() {
            proc_threads.push(threads.len() as u32);
            for j in 0..p.parallelism {
                let t = threads.len() as u32;
                let first_private = ploc.len() as u32;
                for k in 0..p.private_pages[j] {
                    ploc.push(NONE);
                    ptouched.push(false);
                    powner.push(t);
                    pidx.push(k);
                }
                max_n = max_n.max(p.private_pages[j] as usize);
                threads.push(Thread {
                    proc: i as u32,
                    idx: j as u32,
                    cluster: NONE,
                    state: State::Running,
                    since: 0,
                    eff: 0,
                    next_barrier: 0,
                    next_barrier_eff: 0,
                    in_barrier: false,
                    pending: Pending::None,
                    priv_mass: 0.0,
                    sh_mass: 0.0,
                    gen: 0,
                    first_private,
                });
            }
            proc_shared_base.push(shared.len() as u32);
            for g in 0..p.shared_pages {
                shared.push(SharedPage {
                    copies: [0; 4],
                    n: 0,
                    owner: NONE,
                    busy: 0,
                    touched: false,
                    proc: i as u32,
                    idx: g,
                });
            }
            max_n = max_n.max(p.window as usize);
        }
        proc_threads.push(threads.len() as u32);
        let np = procs.len();
        let mut sim = Sim {
            zp: ZipfTables::new(max_n, params.private_zipf),
            zs: ZipfTables::new(max_n, params.shared_zipf),
            net,
            threads,
            proc_threads,
            ploc,
            ptouched,
            powner,
            pidx,
            shared,
            proc_shared_base,
            frames: vec![Vec::with_capacity(params.pages_per_cluster + 1); n],
            pages: vec![0; np * n],
            running: vec![u32::MAX; n],
            disk_busy: vec![0; n],
            evictions_slice: vec![0; n],
            prio: vec![0.0; np],
            prio_rank: vec![0; np],
            prev: vec![Vec::new(); np],
            rounds: vec![HashMap::new(); np],
            heap: BinaryHeap::new(),
            seq: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            seed,
            time: Breakdown::default(),
            counters: Counters::default(),
            proc_slices_run: vec![0; np],
            residence: vec![Vec::new(); np],
            saturated: vec![false; n],
            slices_done: 0,
            procs,
            params,
            spec,
        };
        for t in 0..sim.threads.len() {
            sim.advance_barrier(t as u32);
        }
        sim
    }

    fn n(&self) -> usize {
        self.params.processors
    }

    // ---------- barriers ----------

    fn interval(&self, proc: u32, k: u64) -> u64 {
        let (lo, hi) = self.procs[proc as usize].sync_interval;
        lo + h3(self.seed ^ 0x1111, proc as u64, k) % (hi - lo + 1)
    }

    /// Barrier round k of a process: its threads split into random groups
    /// of `barrier_group`, created on first use and shared by all threads.
    fn round(&mut self, proc: u32, k: u64) -> &mut Round {
        let par = self.procs[proc as usize].parallelism;
        let g = self.params.barrier_group.max(1);
        let seed = self.seed;
        self.rounds[proc as usize].entry(k).or_insert_with(|| {
            let mut perm: Vec<u32> = (0..par as u32).collect();
            let mut x = h3(seed ^ 0x3333, proc as u64, k);
            for i in (1..par).rev() {
                x = mix(x);
                perm.swap(i, (x % (i as u64 + 1)) as usize);
            }
            let mut group_of = vec![0u32; par];
            for (pos, &j) in perm.iter().enumerate() {
                group_of[j as usize] = (pos / g) as u32;
            }
            let groups = perm
                .chunks(g)
                .map(|ch| Barrier {
                    members: ch.len() as u32,
                    arrived: 0,
                    // The root is a random member: perm is random already.
                    root: ch[0],
                    last: 0,
                    waiting: Vec::new(),
                })
                .collect();
            Round {
                group_of,
                groups,
                passed: 0,
            }
        })
    }

    /// Note that thread `j` is past round k; forget the round once all are.
    fn pass_round(&mut self, proc: u32, k: u64) {
        let par = self.procs[proc as usize].parallelism as u32;
        let done = {
            let r = self.round(proc, k);
            r.passed += 1;
            r.passed >= par
        };
        if done {
            self.rounds[proc as usize].remove(&k);
        }
    }

    /// Move a thread's next barrier to the next round in which its group has
    /// another member.
    fn advance_barrier(&mut self, t: u32) {
        let (proc, j) = (self.threads[t as usize].proc, self.threads[t as usize].idx);
        let par = self.procs[proc as usize].parallelism;
        if self.params.barrier_group < 2 || par < 2 {
            self.threads[t as usize].next_barrier_eff = u64::MAX;
            return;
        }
        let (mut k, mut pos) = {
            let th = &self.threads[t as usize];
            (th.next_barrier, th.next_barrier_eff)
        };
        loop {
            k += 1;
            pos += self.interval(proc, k);
            let r = self.round(proc, k);
            if r.groups[r.group_of[j as usize] as usize].members >= 2 {
                break;
            }
            self.pass_round(proc, k);
        }
        let th = &mut self.threads[t as usize];
        th.next_barrier = k;
        th.next_barrier_eff = pos;
    }

    // ---------- event queue ----------

    fn push(&mut self, t: u64, thread: u32) {
        self.seq += 1;
        let gen = self.threads[thread as usize].gen;
        self.heap.push(Reverse((t, self.seq, thread, gen)));
    }

    /// Close the thread's current time segment at `now`.
    fn account(&mut self, t: u32, now: u64) {
        let th = &mut self.threads[t as usize];
        let d = now.saturating_sub(th.since);
        match th.state {
            State::Running => {
                self.time.effective += d;
                th.eff += d;
            }
            State::WaitPage => self.time.page += d,
            State::WaitSync => self.time.sync += d,
        }
        th.since = now;
    }

    /// Draw the thread's next event from `now` while running.
    fn schedule_run(&mut self, t: u32, now: u64) {
        let fs = self.params.shared_fraction;
        let wf = self.params.write_fraction;
        let th = &self.threads[t as usize];
        let r = (1.0 - fs) * (1.0 - th.priv_mass).max(0.0)
            + fs * (1.0 - th.sh_mass).max(0.0)
            + fs * wf * th.sh_mass;
        let to_barrier = th.next_barrier_eff.saturating_sub(th.eff);
        let gap = if r <= 1e-12 {
            u64::MAX
        } else if r >= 1.0 {
            0
        } else {
            let u: f64 = 1.0 - self.rng.random::<f64>(); // (0, 1]
            (u.ln() / (1.0 - r).ln()).floor().min(1e15) as u64
        };
        let at = now.saturating_add(gap.min(to_barrier));
        self.push(at, t);
    }

    // ---------- memory ----------

    /// Access probability per clock of a page by the thread `t`, if it uses it.
    fn use_rate(&self, t: u32, page: u32) -> f64 {
        let th = &self.threads[t as usize];
        if page & SHARED_BIT != 0 {
            let sp = &self.shared[(page & !SHARED_BIT) as usize];
            if sp.proc != th.proc {
                return 0.0;
            }
            let p = &self.procs[th.proc as usize];
            match p.window_offset(th.idx as usize, sp.idx) {
                Some(d) => self.params.shared_fraction * self.zs.w(p.window, d),
                None => 0.0,
            }
        } else if self.powner[page as usize] == t {
            let n = self.procs[th.proc as usize].private_pages[th.idx as usize];
            (1.0 - self.params.shared_fraction) * self.zp.w(n, self.pidx[page as usize])
        } else {
            0.0
        }
    }

    fn page_proc(&self, page: u32) -> u32 {
        if page & SHARED_BIT != 0 {
            self.shared[(page & !SHARED_BIT) as usize].proc
        } else {
            self.threads[self.powner[page as usize] as usize].proc
        }
    }

    fn remove_frame(&mut self, c: Cluster, page: u32) {
        let f = &mut self.frames[c as usize];
        if let Some(i) = f.iter().position(|x| x.page == page) {
            f.swap_remove(i);
        }
    }

    /// Make room for one more page on `c` for the thread `req` running there.
    fn ensure_frame(&mut self, c: Cluster, now: u64, req: u32) {
        if self.frames[c as usize].len() < self.params.pages_per_cluster {
            return;
        }
        let req_proc = self.threads[req as usize].proc;
        let classed = self.spec.replacement == Replacement::Classed;
        let mut best: Option<((u8, u32, u64), usize)> = None;
        for (i, f) in self.frames[c as usize].iter().enumerate() {
            let (proc, class) = if f.page & SHARED_BIT != 0 {
                let sp = &self.shared[(f.page & !SHARED_BIT) as usize];
                if sp.busy > now {
                    continue; // under consistency processing: never evicted
                }
                let mine = sp.proc == req_proc;
                let copy = sp.n >= 2;
                (
                    sp.proc,
                    match (copy, mine) {
                        (true, false) => 1,
                        (true, true) => 2,
                        (false, false) => 3,
                        (false, true) => 5,
                    },
                )
            } else {
                let proc = self.threads[self.powner[f.page as usize] as usize].proc;
                (proc, if proc == req_proc { 6 } else { 4 })
            };
            let q = if proc == req_proc {
                self.use_rate(req, f.page)
            } else {
                0.0
            };
            let est = if q > 0.0 {
                f.stamp.max(now.saturating_sub((1.0 / q) as u64))
            } else {
                f.stamp
            };
            let key = if classed {
                (class, self.prio_rank[proc as usize], est)
            } else {
                (0, 0, est)
            };
            if best.is_none_or(|(k, _)| key < k) {
                best = Some((key, i));
            }
        }
        let Some((_, i)) = best else {
            self.counters.overcommits += 1;
            return;
        };
        let victim = self.frames[c as usize].swap_remove(i).page;
        self.counters.evictions += 1;
        self.evictions_slice[c as usize] += 1;
        let proc = self.page_proc(victim) as usize;
        let n = self.n();
        self.pages[proc * n + c as usize] -= 1;
        let q = self.use_rate(req, victim);
        if victim & SHARED_BIT != 0 {
            let sp = &mut self.shared[(victim & !SHARED_BIT) as usize];
            sp.clear(c);
            sp.n -= 1;
            if sp.n == 0 {
                sp.owner = NONE; // last copy goes to disk
            } else if sp.owner == c {
                sp.owner = sp.first();
            }
            if q > 0.0 {
                self.threads[req as usize].sh_mass -= q / self.params.shared_fraction;
            }
        } else {
            self.ploc[victim as usize] = NONE;
            if q > 0.0 {
                self.threads[req as usize].priv_mass -= q / (1.0 - self.params.shared_fraction);
            }
        }
    }

    fn place(&mut self, c: Cluster, page: u32, stamp: u64) {
        let proc = self.page_proc(page) as usize;
        let n = self.n();
        self.pages[proc * n + c as usize] += 1;
        self.frames[c as usize].push(Frame { page, stamp });
    }

    /// Fault in a private page of thread `t`; returns when it can continue.
    fn fetch_private(&mut self, t: u32, page: u32, now: u64) -> u64 {
        let c = self.threads[t as usize].cluster;
        self.ensure_frame(c, now, t);
        let loc = self.ploc[page as usize];
        let done = if loc != NONE {
            let req = self.net.send(c, loc, now, Msg::Comm);
            let arr = self.net.send(loc, c, req, Msg::Page);
            self.remove_frame(loc, page);
            let proc = self.threads[t as usize].proc as usize;
            let n = self.n();
            self.pages[proc * n + loc as usize] -= 1;
            self.counters.page_moves += 1;
            arr
        } else if self.ptouched[page as usize] {
            self.disk_read(c, now)
        } else {
            now // first touch: a zero-filled frame, no transfer
        };
        self.ptouched[page as usize] = true;
        self.ploc[page as usize] = c;
        self.place(c, page, done);
        let q = self.use_rate(t, page);
        self.threads[t as usize].priv_mass += q / (1.0 - self.params.shared_fraction);
        done
    }

    fn disk_read(&mut self, c: Cluster, now: u64) -> u64 {
        let start = now.max(self.disk_busy[c as usize]);
        self.disk_busy[c as usize] = start + self.params.disk_access;
        self.counters.disk_reads += 1;
        start + self.params.disk_access
    }

    /// Bring a copy of shared page `g` to thread `t`'s cluster.
    fn fetch_shared(&mut self, t: u32, g: u32, now: u64, write: bool) -> u64 {
        let c = self.threads[t as usize].cluster;
        self.ensure_frame(c, now, t);
        let tree = self.net.tree();
        let sp = &self.shared[g as usize];
        let mut pending = Pending::None;
        let done = if sp.n > 0 {
            let src = sp
                .iter()
                .min_by_key(|&h| (tree.hops(c, h), h))
                .unwrap_or(sp.owner);
            let req = self.net.send(c, src, now, Msg::Comm);
            pending = Pending::SendPage { g, src, write };
            self.counters.page_moves += 1;
            req
        } else if sp.touched {
            self.disk_read(c, now)
        } else {
            now
        };
        if pending == Pending::None && write {
            pending = Pending::ThenWrite { g };
        }
        self.threads[t as usize].pending = pending;
        let sp = &mut self.shared[g as usize];
        if sp.n == 0 {
            sp.owner = c;
        }
        sp.set(c);
        sp.n += 1;
        sp.touched = true;
        self.place(c, g | SHARED_BIT, done);
        let q = self.use_rate(t, g | SHARED_BIT);
        self.threads[t as usize].sh_mass += q / self.params.shared_fraction;
        done
    }

    /// Start a sequentially consistent update write: the request travels
    /// to the owner, queues there behind earlier writes to the page, the
    /// owner updates every other copy and collects the acks, then answers
    /// the writer (see [`Sim::continue_op`]). Returns when the next step
    /// happens; `now` if the write is local (the only copy is here).
    fn write_shared(&mut self, t: u32, g: u32, now: u64) -> u64 {
        let c = self.threads[t as usize].cluster;
        let sp = &self.shared[g as usize];
        if sp.n <= 1 && sp.owner == c {
            self.threads[t as usize].pending = Pending::None;
            return now;
        }
        self.counters.shared_writes += 1;
        let o = sp.owner;
        self.threads[t as usize].pending = Pending::AtOwner { g };
        // A local owner still has to run the protocol; make it an event.
        self.net.send(c, o, now, Msg::Comm).max(now + 1)
    }

    /// Next step of a pending operation at `now`; returns when the step
    /// after it happens, with `pending` updated.
    fn continue_op(&mut self, t: u32, now: u64) -> u64 {
        let c = self.threads[t as usize].cluster;
        match self.threads[t as usize].pending {
            Pending::None => now,
            Pending::SendPage { g, src, write } => {
                let busy = self.shared[g as usize].busy;
                if busy > now {
                    return busy; // a copy is consistent only after pending updates
                }
                let arr = self.net.send(src, c, now, Msg::Page);
                self.threads[t as usize].pending = if write {
                    Pending::ThenWrite { g }
                } else {
                    Pending::None
                };
                arr
            }
            Pending::ThenWrite { g } => self.write_shared(t, g, now),
            Pending::AtOwner { g } => {
                let sp = &self.shared[g as usize];
                if sp.busy > now {
                    return sp.busy; // queued behind an earlier write
                }
                let o = if sp.n == 0 { c } else { sp.owner };
                let mut acks = now;
                let holders: Vec<Cluster> = sp.iter().filter(|&h| h != o && h != c).collect();
                for h in holders {
                    let a = self.net.send(o, h, now, Msg::Comm);
                    acks = acks.max(self.net.send(h, o, a, Msg::Comm));
                }
                self.shared[g as usize].busy = acks.max(now + 1);
                self.threads[t as usize].pending = Pending::Reply { owner: o };
                acks.max(now + 1)
            }
            Pending::Reply { owner } => {
                self.threads[t as usize].pending = Pending::None;
                self.net.send(owner, c, now, Msg::Comm).max(now + 1)
            }
        }
    }

    /// Pick a page by access weight among a thread's private pages that
    /// are (`resident`) or are not on its cluster.
    fn pick_private(&mut self, t: u32) -> Option<u32> {
        let th = &self.threads[t as usize];
        let n = self.procs[th.proc as usize].private_pages[th.idx as usize];
        let (c, first) = (th.cluster, th.first_private);
        let total: f64 = (0..n)
            .filter(|&k| self.ploc[(first + k) as usize] != c)
            .map(|k| self.zp.w(n, k))
            .sum();
        let mut u = self.rng.random::<f64>() * total;
        let mut last = None;
        for k in 0..n {
            if self.ploc[(first + k) as usize] != c {
                last = Some(first + k);
                u -= self.zp.w(n, k);
                if u <= 0.0 {
                    break;
                }
            }
        }
        last
    }

    fn pick_shared(&mut self, t: u32, resident: bool) -> Option<u32> {
        let th = &self.threads[t as usize];
        let p = &self.procs[th.proc as usize];
        let base = self.proc_shared_base[th.proc as usize];
        let start = p.window_start(th.idx as usize);
        let c = th.cluster;
        let (w, s) = (p.window, p.shared_pages);
        let g_of = |d: u32| base + (start + d) % s;
        let total: f64 = (0..w)
            .filter(|&d| self.shared[g_of(d) as usize].has(c) == resident)
            .map(|d| self.zs.w(w, d))
            .sum();
        let mut u = self.rng.random::<f64>() * total;
        let mut last = None;
        for d in 0..w {
            if self.shared[g_of(d) as usize].has(c) == resident {
                last = Some(g_of(d));
                u -= self.zs.w(w, d);
                if u <= 0.0 {
                    break;
                }
            }
        }
        last
    }

    /// Recompute a thread's resident access mass on its cluster.
    fn recompute_mass(&mut self, t: u32) {
        let th = &self.threads[t as usize];
        let p = &self.procs[th.proc as usize];
        let n = p.private_pages[th.idx as usize];
        let c = th.cluster;
        let pm: f64 = (0..n)
            .filter(|&k| self.ploc[(th.first_private + k) as usize] == c)
            .map(|k| self.zp.w(n, k))
            .sum();
        let base = self.proc_shared_base[th.proc as usize];
        let start = p.window_start(th.idx as usize);
        let sm: f64 = (0..p.window)
            .filter(|&d| self.shared[(base + (start + d) % p.shared_pages) as usize].has(c))
            .map(|d| self.zs.w(p.window, d))
            .sum();
        let th = &mut self.threads[t as usize];
        th.priv_mass = pm;
        th.sh_mass = sm;
    }

    // ---------- events ----------

    fn on_event(&mut self, t: u32, now: u64) {
        self.counters.events += 1;
        let state = self.threads[t as usize].state;
        self.account(t, now);
        match state {
            State::WaitPage if self.threads[t as usize].pending != Pending::None => {
                let next = self.continue_op(t, now);
                if next <= now && self.threads[t as usize].pending == Pending::None {
                    self.threads[t as usize].state = State::Running;
                    self.schedule_run(t, now);
                } else {
                    self.push(next.max(now + 1), t);
                }
            }
            State::WaitPage | State::WaitSync => {
                // Page arrived / write acknowledged / barrier released.
                self.threads[t as usize].state = State::Running;
                self.schedule_run(t, now);
            }
            State::Running => {
                let th = &self.threads[t as usize];
                if th.eff >= th.next_barrier_eff {
                    self.arrive(t, now);
                } else {
                    self.access(t, now);
                }
            }
        }
    }

    fn access(&mut self, t: u32, now: u64) {
        let fs = self.params.shared_fraction;
        let wf = self.params.write_fraction;
        let th = &self.threads[t as usize];
        let rp = (1.0 - fs) * (1.0 - th.priv_mass).max(0.0);
        let rsm = fs * (1.0 - th.sh_mass).max(0.0);
        let rsw = fs * wf * th.sh_mass;
        let u = self.rng.random::<f64>() * (rp + rsm + rsw);
        let done = if u < rp {
            match self.pick_private(t) {
                Some(p) => self.fetch_private(t, p, now),
                None => now,
            }
        } else if u < rp + rsm {
            match self.pick_shared(t, false) {
                Some(g) => {
                    let write = self.rng.random::<f64>() < wf;
                    let d = self.fetch_shared(t, g, now, write);
                    if d <= now && write {
                        self.write_shared(t, g, now)
                    } else {
                        d
                    }
                }
                None => now,
            }
        } else {
            match self.pick_shared(t, true) {
                Some(g) => self.write_shared(t, g, now),
                None => now,
            }
        };
        let th = &mut self.threads[t as usize];
        if done <= now && th.pending == Pending::None {
            // Resolved locally: the access was one effective clock.
            th.eff += 1;
            self.time.effective += 1;
            th.since = now + 1;
            self.schedule_run(t, now + 1);
        } else {
            th.state = State::WaitPage;
            self.push(done.max(now + 1), t);
        }
    }

    /// Thread reaches its barrier: message the group's root, wait for the
    /// root's release once every member has arrived.
    fn arrive(&mut self, t: u32, now: u64) {
        let (proc, k, j) = {
            let th = &self.threads[t as usize];
            (th.proc, th.next_barrier, th.idx)
        };
        let c = self.threads[t as usize].cluster;
        let base = self.proc_threads[proc as usize];
        let (gi, root) = {
            let r = self.round(proc, k);
            let gi = r.group_of[j as usize] as usize;
            (gi, r.groups[gi].root)
        };
        let rc = self.threads[(base + root) as usize].cluster;
        let at = self.net.send(c, rc, now, Msg::Comm);
        {
            let th = &mut self.threads[t as usize];
            th.state = State::WaitSync;
            th.in_barrier = true;
        }
        let complete = {
            let b = &mut self.round(proc, k).groups[gi];
            b.arrived += 1;
            b.last = b.last.max(at);
            b.waiting.push(t);
            (b.arrived == b.members).then(|| (std::mem::take(&mut b.waiting), b.last))
        };
        self.pass_round(proc, k);
        self.advance_barrier(t);
        let Some((waiting, last)) = complete else {
            return;
        };
        self.counters.barriers += 1;
        for w in waiting {
            let wc = self.threads[w as usize].cluster;
            let rel = self.net.send(rc, wc, last, Msg::Comm);
            self.threads[w as usize].in_barrier = false;
            self.push(rel.max(now), w);
        }
    }

    // ---------- slices ----------

    fn schedule_slice(&mut self) -> Vec<Option<Vec<Cluster>>> {
        let n = self.n();
        let np = self.procs.len();
        let mut order: Vec<usize> = (0..np).collect();
        order.sort_by(|&a, &b| self.prio[a].total_cmp(&self.prio[b]).then(a.cmp(&b)));
        // Replacement rank: lowest priority (largest value) first.
        for (rank, &i) in order.iter().rev().enumerate() {
            self.prio_rank[i] = rank as u32;
        }
        let mut free = vec![true; n];
        let mut out = vec![None; np];
        match self.spec.policy {
            Policy::Kernel(algo) => {
                let tree = self.net.tree().clone();
                let used: Vec<u32> = self.frames.iter().map(|f| f.len() as u32).collect();
                for &i in &order {
                    let need = self.procs[i].parallelism;
                    let req = Request {
                        need,
                        prev: &self.prev[i],
                        pages: &self.pages[i * n..(i + 1) * n],
                        used_pages: &used,
                    };
                    if let Some(alloc) = sched::allocate(algo, &tree, &free, &req, &mut self.rng) {
                        for &c in &alloc {
                            free[c as usize] = false;
                        }
                        out[i] = Some(sched::place_threads(&alloc, &self.prev[i], n));
                    }
                }
            }
            Policy::FreeMarket { .. } => {
                self.fm_place();
                // Local schedulers honour the disclosed priority; a process
                // runs only when all its threads get their clusters (it
                // yields the others rather than run unsynchronised).
                for &i in &order {
                    if self.residence[i].iter().all(|&c| free[c as usize]) {
                        for &c in &self.residence[i] {
                            free[c as usize] = false;
                        }
                        out[i] = Some(self.residence[i].clone());
                    }
                }
            }
        }
        out
    }

    /// Load of each cluster as the information disclosure shows it,
    /// leaving out process `skip`.
    fn fm_load(&self, skip: usize) -> Vec<f64> {
        let mut load = vec![0.0; self.n()];
        for (i, r) in self.residence.iter().enumerate() {
            if i != skip {
                for &c in r {
                    load[c as usize] += 1.0;
                }
            }
        }
        for (l, &s) in load.iter_mut().zip(&self.saturated) {
            if s {
                *l += 1.0;
            }
        }
        load
    }

    /// Free market: processes without a home choose one; those that did
    /// not run last slice consider moving, weighing the expected gain in
    /// processor share against the cost of moving their pages.
    fn fm_place(&mut self) {
        let tree = self.net.tree().clone();
        let n = self.n();
        let np = self.procs.len();
        for i in 0..np {
            let need = self.procs[i].parallelism;
            if self.residence[i].is_empty() {
                let load = self.fm_load(i);
                self.residence[i] = sched::fm_pick(&tree, &load, need);
                continue;
            }
        }
        let mut order: Vec<usize> = (0..np).collect();
        order.sort_by(|&a, &b| self.prio[a].total_cmp(&self.prio[b]).then(a.cmp(&b)));
        for i in order {
            let need = self.procs[i].parallelism;
            let load = self.fm_load(i);
            let cur = self.residence[i]
                .iter()
                .map(|&c| load[c as usize])
                .fold(0.0, f64::max);
            if cur < 1.0 {
                continue;
            }
            let cand = sched::fm_pick(&tree, &load, need);
            let new = cand.iter().map(|&c| load[c as usize]).fold(0.0, f64::max);
            let gain = (1.0 / (1.0 + new) - 1.0 / (1.0 + cur))
                * self.params.quantum as f64
                * need as f64
                * self.params.fm_horizon;
            let pages: u64 = self.pages[i * n..(i + 1) * n]
                .iter()
                .map(|&x| x as u64)
                .sum();
            let hops = tree.hops(self.residence[i][0], cand[0]).max(2) as f64;
            let cost = pages as f64 * self.params.page_move_cost as f64 * hops;
            if gain > cost {
                self.residence[i] = sched::place_threads(&cand, &self.residence[i], n);
                self.counters.migrations += 1;
            }
        }
    }

    /// Drop shared copies of process `i` that lie outside its new
    /// allocation (at no cost), keeping one copy of pages with none inside.
    fn drop_outside(&mut self, i: usize, alloc: &[Cluster]) {
        let n = self.n();
        let mut inside = [0u64; 4];
        for &c in alloc {
            inside[c as usize >> 6] |= 1 << (c & 63);
        }
        let base = self.proc_shared_base[i] as usize;
        let count = self.procs[i].shared_pages as usize;
        let mut touched = vec![false; n];
        let mut any = false;
        for g in base..base + count {
            let sp = &mut self.shared[g];
            if sp.n == 0 {
                continue;
            }
            let outside: [u64; 4] = std::array::from_fn(|w| sp.copies[w] & !inside[w]);
            if outside.iter().all(|&w| w == 0) {
                continue;
            }
            let has_inside = (0..4).any(|w| sp.copies[w] & inside[w] != 0);
            let mut drop = outside;
            if !has_inside {
                let o = sp.owner as usize;
                drop[o >> 6] &= !(1 << (o & 63));
            }
            for (w, &word) in drop.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let c = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    sp.clear(c as Cluster);
                    sp.n -= 1;
                    touched[c] = true;
                    any = true;
                    self.pages[i * n + c] -= 1;
                    self.counters.copies_dropped += 1;
                }
            }
            if !sp.has(sp.owner) {
                sp.owner = sp.first();
            }
        }
        if !any {
            return;
        }
        for (c, _) in touched.iter().enumerate().filter(|(_, &t)| t) {
            let shared = &self.shared;
            self.frames[c].retain(|f| {
                f.page & SHARED_BIT == 0
                    || shared[(f.page & !SHARED_BIT) as usize].has(c as Cluster)
            });
        }
    }

    /// Stamp the pages a thread leaves behind with its estimated last use.
    fn stamp_leaving(&mut self, t: u32, now: u64) {
        let c = self.threads[t as usize].cluster;
        if c == NONE {
            return;
        }
        let mut frames = std::mem::take(&mut self.frames[c as usize]);
        for f in &mut frames {
            let q = self.use_rate(t, f.page);
            if q > 0.0 {
                f.stamp = f.stamp.max(now.saturating_sub((1.0 / q) as u64));
            }
        }
        self.frames[c as usize] = frames;
    }

    /// Run one slice starting at `start`; returns the idle processor count.
    fn run_slice(&mut self, start: u64) -> usize {
        let n = self.n();
        let end = start + self.params.quantum;
        let alloc = self.schedule_slice();
        self.running.iter_mut().for_each(|r| *r = u32::MAX);
        self.evictions_slice.iter_mut().for_each(|e| *e = 0);
        let mut busy = 0;
        for (i, a) in alloc.iter().enumerate() {
            let Some(a) = a else { continue };
            self.drop_outside(i, a);
            self.proc_slices_run[i] += 1;
            busy += a.len();
            for (j, &c) in a.iter().enumerate() {
                let t = self.proc_threads[i] + j as u32;
                self.running[c as usize] = t;
                let th = &mut self.threads[t as usize];
                th.cluster = c;
                th.since = start;
                th.gen = th.gen.wrapping_add(1);
                th.state = if th.in_barrier {
                    State::WaitSync
                } else {
                    State::Running
                };
            }
            self.prev[i] = a.clone();
        }
        let idle = n - busy;
        self.time.idle += idle as u64 * self.params.quantum;
        self.net.settle(start);
        for c in 0..n {
            let t = self.running[c];
            if t == u32::MAX {
                continue;
            }
            self.recompute_mass(t);
            if self.threads[t as usize].state == State::Running {
                self.schedule_run(t, start);
            }
        }
        while let Some(&Reverse((time, _, t, gen))) = self.heap.peek() {
            if time >= end {
                break;
            }
            self.heap.pop();
            if self.threads[t as usize].gen != gen {
                continue;
            }
            self.on_event(t, time);
        }
        self.heap.clear();
        for c in 0..n {
            let t = self.running[c];
            if t == u32::MAX {
                continue;
            }
            self.account(t, end);
            self.stamp_leaving(t, end);
            let th = &mut self.threads[t as usize];
            // In-flight page moves and writes complete; a released barrier
            // wait ends. Only an unreleased barrier wait carries over.
            if !th.in_barrier {
                th.state = State::Running;
            }
            th.pending = Pending::None;
            th.gen = th.gen.wrapping_add(1);
        }
        idle
    }

    /// Total resident pages of process i.
    fn proc_pages(&self, i: usize) -> u64 {
        let n = self.n();
        self.pages[i * n..(i + 1) * n]
            .iter()
            .map(|&x| x as u64)
            .sum()
    }

    fn age(&mut self, ran: &[bool], idle: usize) {
        let penalty_on = matches!(self.spec.policy, Policy::FreeMarket { penalty: true });
        // Saturation as disclosed: a cluster whose memory evicted pages
        // this slice, or whose link was busy most of the slice.
        let link = self.net.take_cluster_link_use();
        let limit = (self.params.quantum * self.params.network_planes as u64) as f64 * 2.0 * 0.5;
        for ((s, &e), &l) in self
            .saturated
            .iter_mut()
            .zip(&self.evictions_slice)
            .zip(&link)
        {
            *s = e > 0 || l as f64 > limit;
        }
        let inputs: Vec<AgingInput> = (0..self.procs.len())
            .map(|i| {
                let need = self.procs[i].parallelism;
                let pages = self.proc_pages(i);
                let mut penalty = 0.0;
                if penalty_on && ran[i] {
                    let sat = self.prev[i]
                        .iter()
                        .filter(|&&c| self.saturated[c as usize])
                        .count();
                    let u_r = self.params.c_p * need as f64 + self.params.c_m * pages as f64;
                    penalty = self.params.fm_penalty * u_r * need as f64
                        / self.params.processors as f64
                        * sat as f64
                        / need as f64;
                }
                AgingInput {
                    need,
                    ran: ran[i],
                    pages,
                    penalty,
                }
            })
            .collect();
        sched::age(&mut self.prio, &inputs, idle, &self.params);
    }

    /// Effective slices of process i (mean over its threads).
    fn proc_effective(&self, i: usize) -> f64 {
        let ts = self.proc_threads[i] as usize..self.proc_threads[i + 1] as usize;
        let sum: u64 = self.threads[ts.clone()].iter().map(|t| t.eff).sum();
        sum as f64 / ts.len() as f64 / self.params.quantum as f64
    }

    /// Run to completion; `on_slice` is called after each slice.
    pub fn run(mut self, on_slice: &(dyn Fn() + Sync)) -> Outcome {
        let wall = Instant::now();
        while self.slices_done < self.params.max_slices {
            self.one_slice();
            on_slice();
            let finished = (0..self.procs.len())
                .any(|i| self.proc_effective(i) >= self.params.finish_slices as f64);
            if finished {
                break;
            }
        }
        Outcome {
            proc_effective_slices: (0..self.procs.len())
                .map(|i| self.proc_effective(i))
                .collect(),
            proc_slices_run: self.proc_slices_run.clone(),
            slices: self.slices_done,
            time: self.time,
            counters: self.counters,
            wall_seconds: wall.elapsed().as_secs_f64(),
            spec: self.spec,
        }
    }

    fn prev_ran(&self) -> Vec<bool> {
        let mut ran = vec![false; self.procs.len()];
        for &t in &self.running {
            if t != u32::MAX {
                ran[self.threads[t as usize].proc as usize] = true;
            }
        }
        ran
    }

    /// Check the model's conservation invariants; returns a description of
    /// the first violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        let n = self.n();
        let mut resident = vec![0u32; self.procs.len() * n];
        let mut seen_private = vec![0u32; self.ploc.len()];
        let mut seen_shared = vec![0u32; self.shared.len()];
        for (c, fr) in self.frames.iter().enumerate() {
            if fr.len() > self.params.pages_per_cluster + self.counters.overcommits as usize {
                return Err(format!("cluster {c} holds {} frames", fr.len()));
            }
            for f in fr {
                let proc = self.page_proc(f.page) as usize;
                resident[proc * n + c] += 1;
                if f.page & SHARED_BIT != 0 {
                    let g = (f.page & !SHARED_BIT) as usize;
                    if !self.shared[g].has(c as Cluster) {
                        return Err(format!("frame of shared {g} on {c} not in its copy set"));
                    }
                    seen_shared[g] += 1;
                } else {
                    if self.ploc[f.page as usize] != c as Cluster {
                        return Err(format!("private {} on {c} but located elsewhere", f.page));
                    }
                    seen_private[f.page as usize] += 1;
                }
            }
        }
        if resident != self.pages {
            return Err("per-process page counts disagree with frames".into());
        }
        for (p, &s) in seen_private.iter().enumerate() {
            let expect = (self.ploc[p] != NONE) as u32;
            if s != expect {
                return Err(format!("private page {p} resident {s} times"));
            }
        }
        for (g, sp) in self.shared.iter().enumerate() {
            if seen_shared[g] != sp.n as u32 || sp.iter().count() != sp.n as usize {
                return Err(format!(
                    "shared page {g}: {} frames, n = {}",
                    seen_shared[g], sp.n
                ));
            }
            if sp.n > 0 && !sp.has(sp.owner) {
                return Err(format!("shared page {g}: owner holds no copy"));
            }
        }
        Ok(())
    }

    /// Pages per location class: (private resident, private on disk,
    /// private untouched, shared pages with copies, shared copies, shared on disk, shared untouched).
    pub fn page_census(&self) -> [u64; 7] {
        let mut out = [0u64; 7];
        for (p, &l) in self.ploc.iter().enumerate() {
            let k = if l != NONE {
                0
            } else if self.ptouched[p] {
                1
            } else {
                2
            };
            out[k] += 1;
        }
        for sp in &self.shared {
            if sp.n > 0 {
                out[3] += 1;
                out[4] += sp.n as u64;
            } else if sp.touched {
                out[5] += 1;
            } else {
                out[6] += 1;
            }
        }
        out
    }

    /// Run `slices` slices without the finish rule (for tests).
    pub fn step(&mut self, slices: u64) -> Breakdown {
        let before = self.time;
        for _ in 0..slices {
            self.one_slice();
        }
        let mut d = self.time;
        d.effective -= before.effective;
        d.page -= before.page;
        d.sync -= before.sync;
        d.idle -= before.idle;
        d
    }

    fn one_slice(&mut self) {
        let idle = self.run_slice(self.slices_done * self.params.quantum);
        self.slices_done += 1;
        let ran = self.prev_ran();
        self.age(&ran, idle);
    }

    /// Slices simulated so far.
    pub fn slices_done(&self) -> u64 {
        self.slices_done
    }

    /// Processor time so far.
    pub fn time(&self) -> Breakdown {
        self.time
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.counters
    }
}

/// Run one spec to completion.
pub fn run(spec: RunSpec, params: Params, on_slice: &(dyn Fn() + Sync)) -> Outcome {
    Sim::new(spec, params).run(on_slice)
}

/// Sum several breakdowns.
pub fn sum(bs: &[Breakdown]) -> Breakdown {
    let mut t = Breakdown::default();
    for b in bs {
        t.add(b);
    }
    t
}
