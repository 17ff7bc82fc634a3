//! Round-trip estimation and the retransmission timeout (RFC 6298).

use crate::Time;

/// Smoothed RTT state of one channel.
#[derive(Debug, Clone)]
pub(crate) struct Rtt {
    srtt: Option<Time>,
    /// Smallest sample seen: the path's round trip without queueing.
    min_rtt: Option<Time>,
    rttvar: Time,
    min: Time,
    max: Time,
    initial: Time,
    /// Back-off multiplier exponent since the last progress.
    backoff: u32,
}

impl Rtt {
    pub(crate) fn new(initial: Time, min: Time, max: Time) -> Self {
        // The endpoint's configuration is clamped; stay total regardless.
        let max = max.max(min);
        Self {
            srtt: None,
            min_rtt: None,
            rttvar: 0,
            min,
            max,
            initial,
            backoff: 0,
        }
    }

    /// Takes a sample from a packet sent once (Karn's rule is the caller's).
    pub(crate) fn sample(&mut self, r: Time) {
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let err = s.abs_diff(r);
                self.rttvar = (3 * self.rttvar + err) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
    }

    /// Smoothed RTT, or the initial timeout before any sample.
    pub(crate) fn srtt(&self) -> Time {
        self.srtt.unwrap_or(self.initial)
    }

    /// Back-off exponent in force.
    pub(crate) fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Smallest round trip seen, if any.
    pub(crate) fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }

    /// Reordering allowance of RACK: how much longer than the round trip of
    /// a later delivered packet an unacknowledged one may take before it is
    /// presumed lost rather than reordered. `mult` quarters of the path's
    /// minimum round trip (of `rack_rtt` before any clean sample), at most
    /// the smoothed round trip (RFC 8985) or the minimum timeout, whichever
    /// is longer: a machine that time-shares its CPUs delays packets by a
    /// scheduler's time slice, far longer than the round trip, and a loss
    /// is then found no later than a timeout would find it.
    pub(crate) fn reorder_window(&self, rack_rtt: Time, mult: u32) -> Time {
        let quarter = self.min_rtt.unwrap_or(rack_rtt) / 4;
        quarter
            .saturating_mul(Time::from(mult))
            .min(self.srtt().max(self.min).max(quarter))
    }

    /// Current timeout including back-off.
    pub(crate) fn rto(&self) -> Time {
        let base = match self.srtt {
            None => self.initial,
            Some(s) => s + (4 * self.rttvar).max(1_000),
        };
        base.clamp(self.min, self.max)
            .saturating_mul(1 << self.backoff.min(20))
            .min(self.max)
    }

    pub(crate) fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub(crate) fn reset_backoff(&mut self) {
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_and_backs_off_within_bounds() {
        let mut r = Rtt::new(10_000_000, 200_000, 1_000_000_000);
        assert_eq!(r.rto(), 10_000_000);
        for _ in 0..50 {
            r.sample(100_000);
        }
        assert_eq!(r.srtt(), 100_000);
        assert_eq!(r.rto(), 200_000);
        r.back_off();
        r.back_off();
        assert_eq!(r.rto(), 800_000);
        for _ in 0..40 {
            r.back_off();
        }
        assert_eq!(r.rto(), 1_000_000_000);
        r.reset_backoff();
        assert_eq!(r.rto(), 200_000);
    }
}
