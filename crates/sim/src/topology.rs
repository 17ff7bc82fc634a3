//! The resource management tree and the tree-shaped, duplicated, one-hop
//! buffered switching network that mirrors it (seed 003 §2.1, §3).

/// Cluster index (processor + memory), 0..256.
pub type Cluster = u16;

/// A tree of switches whose leaves are the clusters. Every subtree covers a
/// contiguous range of cluster indices, so a node is (level, index) and its
/// clusters are `index*span(level) .. (index+1)*span(level)`.
#[derive(Debug, Clone)]
pub struct Tree {
    fanouts: Vec<usize>,
    /// span[l] = clusters under one node at level l (level 0 = root, level depth = cluster).
    span: Vec<usize>,
    clusters: usize,
}

/// A node of the resource management tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Node {
    /// 0 = root; `depth()` = a single cluster.
    pub level: usize,
    /// Index among the nodes of its level.
    pub index: usize,
}

impl Tree {
    /// Tree with the given fan-outs from the root.
    pub fn new(fanouts: &[usize]) -> Tree {
        let depth = fanouts.len();
        let mut span = vec![1; depth + 1];
        for l in (0..depth).rev() {
            span[l] = span[l + 1] * fanouts[l];
        }
        Tree {
            fanouts: fanouts.to_vec(),
            clusters: span[0],
            span,
        }
    }
    /// Number of clusters.
    pub fn clusters(&self) -> usize {
        self.clusters
    }
    /// Number of switch levels (cluster level index).
    pub fn depth(&self) -> usize {
        self.fanouts.len()
    }
    /// Clusters under a node at `level`.
    pub fn span(&self, level: usize) -> usize {
        self.span[level]
    }
    /// Cluster range of a node.
    pub fn range(&self, n: Node) -> std::ops::Range<usize> {
        let s = self.span[n.level];
        n.index * s..(n.index + 1) * s
    }
    /// The ancestor of cluster `c` at `level`.
    pub fn ancestor(&self, c: Cluster, level: usize) -> Node {
        Node {
            level,
            index: c as usize / self.span[level],
        }
    }
    /// Level of the lowest common ancestor of two clusters.
    pub fn lca_level(&self, a: Cluster, b: Cluster) -> usize {
        let mut l = self.depth();
        while a as usize / self.span[l] != b as usize / self.span[l] {
            l -= 1;
        }
        l
    }
    /// Lowest node containing all `cs`, raised until it has at least `need` clusters.
    pub fn home(&self, cs: &[Cluster], need: usize) -> Node {
        let mut level = self.depth();
        if let Some(&first) = cs.first() {
            for &c in cs {
                level = level.min(self.lca_level(first, c));
            }
            while self.span[level] < need {
                level -= 1;
            }
            self.ancestor(first, level)
        } else {
            Node { level: 0, index: 0 }
        }
    }
    /// Number of link hops between two clusters (cluster→switch links included).
    pub fn hops(&self, a: Cluster, b: Cluster) -> usize {
        if a == b {
            0
        } else {
            2 * (self.depth() - self.lca_level(a, b))
        }
    }
    /// Nodes at `level`, left to right.
    pub fn nodes(&self, level: usize) -> impl Iterator<Item = Node> {
        (0..self.clusters / self.span[level]).map(move |index| Node { level, index })
    }
}

/// Link-level timing of the switching network. Each tree edge has an up and
/// a down direction, each with `planes` parallel channels (the duplicated
/// network). A message is stored and forwarded hop by hop: it takes the
/// channel that frees first, waits while it is busy, and holds it for
/// `base / multiplier` clocks. Channels are reserved when the message is
/// sent (a reservation model): a message sent later in simulated time can
/// never overtake one already reserved on the same channel.
#[derive(Debug, Clone)]
pub struct Net {
    tree: Tree,
    planes: usize,
    /// busy-until per (edge, direction, plane); edge id = offset[level] + index.
    busy: Vec<u64>,
    /// Busy clocks accumulated per edge/direction/plane (for saturation).
    used: Vec<u64>,
    edge_offset: Vec<usize>,
    /// Multiplier per edge level (level = child node level).
    mult: Vec<f64>,
    /// Hop-cost cache per (level, kind): [comm, page].
    hop_cost: Vec<[u64; 2]>,
}

/// What a message carries, which sets its per-hop base cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// Request, update, ack, barrier message.
    Comm,
    /// A whole page.
    Page,
}

impl Net {
    /// Network over `tree`. `multipliers[0]` is the cluster link, upward from there.
    pub fn new(tree: Tree, planes: usize, multipliers: &[f64], comm: u64, page: u64) -> Net {
        let depth = tree.depth();
        let mut edge_offset = vec![0; depth + 1];
        let mut total = 0;
        for (l, off) in edge_offset.iter_mut().enumerate().skip(1) {
            *off = total;
            total += tree.clusters() / tree.span(l);
        }
        let mut mult = vec![1.0; depth + 1];
        let mut hop_cost = vec![[0, 0]; depth + 1];
        for l in 1..=depth {
            let m = multipliers[(depth - l).min(multipliers.len() - 1)];
            mult[l] = m;
            hop_cost[l] = [
                ((comm as f64 / m).ceil() as u64).max(1),
                ((page as f64 / m).ceil() as u64).max(1),
            ];
        }
        Net {
            tree,
            planes,
            busy: vec![0; total * 2 * planes],
            used: vec![0; total * 2 * planes],
            edge_offset,
            mult,
            hop_cost,
        }
    }
    /// The tree the network mirrors.
    pub fn tree(&self) -> &Tree {
        &self.tree
    }
    /// Bandwidth multiplier of edges whose child is at `level`.
    pub fn multiplier(&self, level: usize) -> f64 {
        self.mult[level]
    }

    fn hop(&mut self, level: usize, index: usize, up: bool, t: u64, cost: u64) -> u64 {
        let base = ((self.edge_offset[level] + index) * 2 + up as usize) * self.planes;
        let mut best = base;
        for p in base + 1..base + self.planes {
            if self.busy[p] < self.busy[best] {
                best = p;
            }
        }
        let start = t.max(self.busy[best]);
        self.busy[best] = start + cost;
        self.used[best] += cost;
        start + cost
    }

    /// Send a message from `a` to `b` at time `t`; returns the arrival time.
    pub fn send(&mut self, a: Cluster, b: Cluster, t: u64, kind: Msg) -> u64 {
        if a == b {
            return t;
        }
        let k = match kind {
            Msg::Comm => 0,
            Msg::Page => 1,
        };
        let top = self.tree.lca_level(a, b);
        let depth = self.tree.depth();
        let mut t = t;
        for l in (top + 1..=depth).rev() {
            let idx = a as usize / self.tree.span(l);
            t = self.hop(l, idx, true, t, self.hop_cost[l][k]);
        }
        for l in top + 1..=depth {
            let idx = b as usize / self.tree.span(l);
            t = self.hop(l, idx, false, t, self.hop_cost[l][k]);
        }
        t
    }

    /// Unloaded latency of a message (for placement estimates).
    pub fn latency(&self, a: Cluster, b: Cluster, kind: Msg) -> u64 {
        if a == b {
            return 0;
        }
        let k = (kind == Msg::Page) as usize;
        let top = self.tree.lca_level(a, b);
        (top + 1..=self.tree.depth())
            .map(|l| 2 * self.hop_cost[l][k])
            .sum()
    }

    /// Take and reset the busy clocks of the cluster links (level `depth`)
    /// touching each cluster, summed over both directions and planes.
    pub fn take_cluster_link_use(&mut self) -> Vec<u64> {
        let depth = self.tree.depth();
        let n = self.tree.clusters();
        let mut out = vec![0; n];
        for (c, o) in out.iter_mut().enumerate() {
            let base = (self.edge_offset[depth] + c) * 2 * self.planes;
            *o = self.used[base..base + 2 * self.planes].iter().sum();
        }
        self.used.iter_mut().for_each(|u| *u = 0);
        out
    }

    /// Forget all reservations older than `t` (keeps later ones).
    pub fn settle(&mut self, t: u64) {
        for b in &mut self.busy {
            if *b < t {
                *b = t;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_shapes() {
        let t = Tree::new(&[8, 8, 4]);
        assert_eq!(t.clusters(), 256);
        assert_eq!(t.span(1), 32);
        assert_eq!(t.hops(0, 1), 2);
        assert_eq!(t.hops(0, 4), 4);
        assert_eq!(t.hops(0, 255), 6);
        let t = Tree::new(&[4, 4, 4, 4]);
        assert_eq!(t.hops(0, 255), 8);
        assert_eq!(t.home(&[0, 1, 2], 3), Node { level: 3, index: 0 });
        assert_eq!(t.home(&[0, 1, 2], 5), Node { level: 2, index: 0 });
        assert_eq!(t.range(Node { level: 2, index: 1 }), 16..32);
    }

    #[test]
    fn messages_queue_on_busy_links() {
        let t = Tree::new(&[8, 8, 4]);
        let mut n = Net::new(t, 1, &[1.0, 2.0, 4.0, 8.0], 50, 500);
        assert_eq!(n.latency(0, 1, Msg::Comm), 100);
        let a = n.send(0, 1, 0, Msg::Comm);
        assert_eq!(a, 100);
        // Same path right after: waits for the first hop.
        let b = n.send(0, 1, 0, Msg::Comm);
        assert_eq!(b, 150);
        // Page across the root: cluster links 500, then 250, 125 up and down.
        let p = n.send(8, 200, 1000, Msg::Page);
        assert_eq!(p, 1000 + 2 * (500 + 250 + 125));
    }

    #[test]
    fn duplicated_network_carries_two_at_once() {
        let t = Tree::new(&[4, 4, 4, 4]);
        let mut n = Net::new(t, 2, &[1.0; 4], 50, 500);
        assert_eq!(n.send(0, 1, 0, Msg::Comm), 100);
        assert_eq!(n.send(0, 1, 0, Msg::Comm), 100);
        assert_eq!(n.send(0, 1, 0, Msg::Comm), 150);
    }
}
