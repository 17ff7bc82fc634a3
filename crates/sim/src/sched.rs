//! Kernel placement (algo0–algo4 of seed 003 §2.2), the thread placement
//! rule, priority aging (§2.1.2) and the free-market self-placement.

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::config::{Algo, Params};
use crate::topology::{Cluster, Node, Tree};

/// What a placement decision may look at for one process.
pub struct Request<'a> {
    /// Clusters requested (fixed parallelism).
    pub need: usize,
    /// Cluster of each thread at its last run (empty if never run).
    pub prev: &'a [Cluster],
    /// Pages the process holds on each cluster.
    pub pages: &'a [u32],
    /// Pages all processes hold on each cluster.
    pub used_pages: &'a [u32],
}

/// Subtree for a process with no history: at the lowest level whose
/// subtrees are big enough, among those with enough free clusters, the one
/// holding the fewest pages (the resource management tree records free
/// processors and pages per subtree); up a level when none has room.
fn initial_subtree(tree: &Tree, free: &[bool], used_pages: &[u32], need: usize) -> Option<Node> {
    for level in (0..=tree.depth()).rev() {
        if tree.span(level) < need {
            continue;
        }
        let best = tree
            .nodes(level)
            .filter(|&n| tree.range(n).filter(|&c| free[c]).count() >= need)
            .min_by_key(|&n| {
                (
                    tree.range(n).map(|c| used_pages[c] as u64).sum::<u64>(),
                    n.index,
                )
            });
        if best.is_some() {
            return best;
        }
    }
    None
}

/// Free clusters of `range`, those holding the process's pages first (most
/// pages first), then the rest in index order.
fn own_first(range: std::ops::Range<usize>, free: &[bool], pages: &[u32]) -> Vec<Cluster> {
    let mut own: Vec<usize> = range.clone().filter(|&c| free[c] && pages[c] > 0).collect();
    own.sort_by_key(|&c| (std::cmp::Reverse(pages[c]), c));
    own.extend(range.filter(|&c| free[c] && pages[c] == 0));
    own.into_iter().map(|c| c as Cluster).collect()
}

/// Choose clusters for one process, or `None` if it must wait this slice.
pub fn allocate(
    algo: Algo,
    tree: &Tree,
    free: &[bool],
    req: &Request<'_>,
    rng: &mut ChaCha8Rng,
) -> Option<Vec<Cluster>> {
    let need = req.need;
    let n = tree.clusters();
    match algo {
        Algo::Algo0 => {
            let mut cand: Vec<Cluster> =
                (0..n).filter(|&c| free[c]).map(|c| c as Cluster).collect();
            if cand.len() < need {
                return None;
            }
            // Partial Fisher–Yates: the first `need` are a uniform sample.
            for i in 0..need {
                let j = rng.random_range(i..cand.len());
                cand.swap(i, j);
            }
            cand.truncate(need);
            Some(cand)
        }
        Algo::Algo1 => {
            let cand: Vec<Cluster> = (0..n)
                .filter(|&c| free[c])
                .take(need)
                .map(|c| c as Cluster)
                .collect();
            (cand.len() == need).then_some(cand)
        }
        Algo::Algo2 | Algo::Algo3 | Algo::Algo4 if req.prev.is_empty() => {
            let node = initial_subtree(tree, free, req.used_pages, need)?;
            let mut cs: Vec<usize> = tree.range(node).filter(|&c| free[c]).collect();
            cs.sort_by_key(|&c| (req.used_pages[c], c));
            cs.truncate(need);
            cs.sort_unstable();
            Some(cs.into_iter().map(|c| c as Cluster).collect())
        }
        Algo::Algo2 | Algo::Algo3 => {
            let home = tree.home(req.prev, need);
            let mut cand = own_first(tree.range(home), free, req.pages);
            if cand.len() >= need {
                cand.truncate(need);
                return Some(cand);
            }
            if algo == Algo::Algo3 {
                return None;
            }
            // algo2: the whole system, own-page clusters first, then by
            // closeness to the home subtree.
            let anchor = tree.range(home).start as Cluster;
            let mut all = own_first(0..n, free, req.pages);
            let split = all
                .iter()
                .position(|&c| req.pages[c as usize] == 0)
                .unwrap_or(all.len());
            all[split..].sort_by_key(|&c| (std::cmp::Reverse(tree.lca_level(c, anchor)), c));
            if all.len() < need {
                return None;
            }
            all.truncate(need);
            Some(all)
        }
        Algo::Algo4 => {
            let home = tree.home(req.prev, need);
            // Strictly the clusters still holding the process's pages: all
            // must be free, or the process gives up this slice.
            let mut kept: Vec<Cluster> = Vec::with_capacity(need);
            for &c in req.prev {
                if req.pages[c as usize] > 0 {
                    if !free[c as usize] {
                        return None;
                    }
                    kept.push(c);
                }
            }
            // Footnote: clusters that lost all the process's pages are
            // replaced from the home subtree.
            if kept.len() < need {
                let mut taken = vec![false; n];
                for &c in &kept {
                    taken[c as usize] = true;
                }
                for c in own_first(tree.range(home), free, req.pages) {
                    if kept.len() == need {
                        break;
                    }
                    if !taken[c as usize] {
                        kept.push(c);
                    }
                }
            }
            (kept.len() == need).then_some(kept)
        }
    }
}

/// Thread placement rule of §2.2: a thread whose previous cluster is in the
/// new allocation stays there; the others take the remaining clusters in
/// allocation order. Returns the cluster of each thread.
pub fn place_threads(alloc: &[Cluster], prev: &[Cluster], n_clusters: usize) -> Vec<Cluster> {
    if prev.is_empty() {
        return alloc.to_vec();
    }
    let mut in_alloc = vec![false; n_clusters];
    for &c in alloc {
        in_alloc[c as usize] = true;
    }
    let mut out = vec![Cluster::MAX; prev.len()];
    for (j, &c) in prev.iter().enumerate() {
        if in_alloc[c as usize] {
            out[j] = c;
            in_alloc[c as usize] = false;
        }
    }
    let mut rest = alloc.iter().copied().filter(|&c| in_alloc[c as usize]);
    for slot in out.iter_mut().filter(|s| **s == Cluster::MAX) {
        // alloc has exactly prev.len() clusters, so this never runs dry.
        *slot = rest.next().unwrap_or(0);
    }
    out
}

/// Per-process inputs to one slice's aging step.
pub struct AgingInput {
    /// Parallelism requested.
    pub need: usize,
    /// Whether it ran this slice (t).
    pub ran: bool,
    /// Pages it holds (all clusters, copies included).
    pub pages: u64,
    /// Extra aging (free-market saturation penalty), added when it ran.
    pub penalty: f64,
}

/// Aging of §2.1.2 for one slice, applied to `prio` (smaller = higher
/// priority). `idle` is nwp, the processors left unused in the slice.
/// Running processes age by (U_r R_c S_c + W_r) f_w; waiting ones are
/// rejuvenated by C_r, and the aging taken on by the running processes is
/// shared out evenly among the waiting ones so the values do not diverge.
pub fn age(prio: &mut [f64], inputs: &[AgingInput], idle: usize, params: &Params) {
    let total = params.processors as f64;
    let waiting = inputs.iter().filter(|i| !i.ran).count();
    let f_w = if waiting > 0 { 1.0 } else { 0.0 };
    let mut given = 0.0;
    for (p, inp) in prio.iter_mut().zip(inputs) {
        if inp.ran {
            let u_r = params.c_p * inp.need as f64 + params.c_m * inp.pages as f64;
            let r_c = inp.need as f64 / total;
            let s_c = 1.0; // a fixed-count constraint is met whenever it runs
            let w_r = params.c_wp * idle as f64 * inp.need as f64 / total;
            let a = (u_r * r_c * s_c + w_r) * f_w + inp.penalty;
            *p += a;
            given += a;
        }
    }
    if waiting > 0 {
        let share = given / waiting as f64;
        for (p, inp) in prio.iter_mut().zip(inputs) {
            if !inp.ran {
                *p -= params.c_r + share;
            }
        }
    }
}

/// Free market: the clusters a process would pick from disclosed state —
/// the lowest subtree big enough whose busiest cluster is least loaded,
/// then the least-loaded clusters in it. `load[c]` is what the information
/// disclosure shows for cluster c (resident threads, plus saturation).
pub fn fm_pick(tree: &Tree, load: &[f64], need: usize) -> Vec<Cluster> {
    let mut best: Option<(f64, f64, Node)> = None;
    for level in (0..=tree.depth()).rev() {
        if tree.span(level) < need {
            continue;
        }
        for n in tree.nodes(level) {
            let mut ls: Vec<f64> = tree.range(n).map(|c| load[c]).collect();
            ls.sort_by(|a, b| a.total_cmp(b));
            let worst = ls[need - 1];
            let sum: f64 = ls[..need].iter().sum();
            if best.is_none_or(|(w, s, _)| (worst, sum) < (w, s)) {
                best = Some((worst, sum, n));
            }
        }
        // Prefer the lowest level that can host the process at all.
        if best.is_some() {
            break;
        }
    }
    let node = best.map(|b| b.2).unwrap_or(Node { level: 0, index: 0 });
    let mut cs: Vec<usize> = tree.range(node).collect();
    cs.sort_by(|&a, &b| load[a].total_cmp(&load[b]).then(a.cmp(&b)));
    cs.truncate(need);
    cs.sort_unstable();
    cs.into_iter().map(|c| c as Cluster).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(1)
    }

    #[test]
    fn algo1_takes_from_the_end() {
        let t = Tree::new(&[8, 8, 4]);
        let mut free = vec![true; 256];
        free[1] = false;
        let pages = vec![0; 256];
        let r = Request {
            need: 3,
            prev: &[],
            pages: &pages,
            used_pages: &pages,
        };
        assert_eq!(
            allocate(Algo::Algo1, &t, &free, &r, &mut rng()),
            Some(vec![0, 2, 3])
        );
    }

    #[test]
    fn algo4_insists_on_its_clusters_and_algo3_does_not() {
        let t = Tree::new(&[8, 8, 4]);
        let mut free = vec![true; 256];
        let mut pages = vec![0; 256];
        let prev: Vec<Cluster> = (0..4).collect();
        pages[..4].fill(10);
        let r = Request {
            need: 4,
            prev: &prev,
            pages: &pages,
            used_pages: &pages,
        };
        assert_eq!(
            allocate(Algo::Algo4, &t, &free, &r, &mut rng()),
            Some(vec![0, 1, 2, 3])
        );
        free[2] = false;
        assert_eq!(allocate(Algo::Algo4, &t, &free, &r, &mut rng()), None);
        // Home of 4 clusters 0..4 is the leaf switch: algo3 fails too ...
        assert_eq!(allocate(Algo::Algo3, &t, &free, &r, &mut rng()), None);
        // ... but algo2 goes outside the home subtree, nearest first.
        let a2 = allocate(Algo::Algo2, &t, &free, &r, &mut rng()).unwrap_or_default();
        assert_eq!(a2, vec![0, 1, 3, 4]);
        // A cluster that lost all pages is replaced inside home.
        free[2] = true;
        pages[3] = 0;
        let r = Request {
            need: 4,
            prev: &prev,
            pages: &pages,
            used_pages: &pages,
        };
        let a4 = allocate(Algo::Algo4, &t, &free, &r, &mut rng()).unwrap_or_default();
        assert_eq!(a4, vec![0, 1, 2, 3]);
    }

    #[test]
    fn initial_placement_picks_emptiest_lowest_subtree() {
        let t = Tree::new(&[4, 4, 4, 4]);
        let mut free = vec![true; 256];
        free[0] = false;
        let mut pages = vec![0; 256];
        pages[5] = 1;
        let r = Request {
            need: 4,
            prev: &[],
            pages: &pages,
            used_pages: &pages,
        };
        assert_eq!(
            allocate(Algo::Algo4, &t, &free, &r, &mut rng()),
            Some(vec![8, 9, 10, 11])
        );
        pages[5] = 0;
        let r = Request {
            need: 4,
            prev: &[],
            pages: &pages,
            used_pages: &pages,
        };
        assert_eq!(
            allocate(Algo::Algo4, &t, &free, &r, &mut rng()),
            Some(vec![4, 5, 6, 7])
        );
        let r = Request {
            need: 256,
            prev: &[],
            pages: &pages,
            used_pages: &pages,
        };
        assert_eq!(allocate(Algo::Algo3, &t, &free, &r, &mut rng()), None);
    }

    #[test]
    fn threads_keep_overlapping_clusters() {
        let prev = vec![10, 11, 12, 13];
        let alloc = vec![12, 13, 20, 21];
        assert_eq!(place_threads(&alloc, &prev, 256), vec![20, 21, 12, 13]);
    }

    #[test]
    fn aging_conserves_and_rejuvenates() {
        let params = Params::default();
        let mut prio = vec![0.0; 3];
        let inputs = vec![
            AgingInput {
                need: 128,
                ran: true,
                pages: 1000,
                penalty: 0.0,
            },
            AgingInput {
                need: 64,
                ran: false,
                pages: 0,
                penalty: 0.0,
            },
            AgingInput {
                need: 64,
                ran: false,
                pages: 0,
                penalty: 0.0,
            },
        ];
        age(&mut prio, &inputs, 128, &params);
        let a = (128.0 + 5.0) * 0.5 + 128.0 * 0.5;
        assert!((prio[0] - a).abs() < 1e-9);
        assert!((prio[1] + 1.0 + a / 2.0).abs() < 1e-9);
        assert!(prio[1] < prio[0]);
    }

    #[test]
    fn fm_pick_avoids_loaded_clusters() {
        let t = Tree::new(&[8, 8, 4]);
        let mut load = vec![0.0; 256];
        for l in load.iter_mut().take(4) {
            *l = 2.0;
        }
        assert_eq!(fm_pick(&t, &load, 4), vec![4, 5, 6, 7]);
        assert_eq!(fm_pick(&t, &load, 30).len(), 30);
    }
}
