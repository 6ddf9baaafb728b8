//! Seats lent and borrowed between priority levels, as upstream's APF controller adjusts
//! them every 10 s (KEP-1040):
//!
//! - each level's seat demand (the seats of its executing and queued requests) is integrated
//!   over the period: its time-weighted average, standard deviation and high watermark;
//! - the envelope (average + deviation) is smoothed: `max(envelope, 0.977 × smoothed + 0.023 ×
//!   envelope)`;
//! - exempt levels first take what they used (at least their lower limit) off the server's
//!   nominal seats; each limited level is then kept between its lower bound (its nominal
//!   limit less what it may lend, raised towards its demand's high watermark up to its
//!   nominal limit) and its upper limit (nominal plus what it may borrow), and the nominal
//!   seats are split among the limited levels in proportion to their targets (their smoothed
//!   demand, at least the lower bound) with one fair proportion for all, as far as the bounds
//!   allow; when the seats left cannot cover the lower bounds, levels get their lower limits
//!   or a share of what is left above them.
//!
//! A level's limits come from its PriorityLevelConfiguration: `lendablePercent` of its
//! nominal seats may be lent, `borrowingLimitPercent` of them borrowed (unset: the whole
//! server's limit).

use std::time::{Duration, Instant};

/// How often the levels' current limits are adjusted (upstream's `borrowingAdjustmentPeriod`).
pub(super) const ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);

/// Weight of the previous smoothed demand (upstream's `seatDemandSmoothingCoefficient`).
const SMOOTHING: f64 = 0.977;

/// The smallest target a level gets (so a proportion of it stays defined).
const MIN_TARGET: f64 = 0.001;

/// Tolerance of the floating-point sums.
const EPSILON: f64 = 1e-7;

/// One level's seat demand, integrated over time since the last [`SeatDemand::reset`].
#[derive(Debug, Clone)]
pub(super) struct SeatDemand {
    value: f64,
    since: Instant,
    start: Instant,
    integral: f64,
    integral_of_squares: f64,
    max: f64,
}

/// What [`SeatDemand::reset`] observed over one period.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Observation {
    /// The period's length in seconds.
    pub(super) seconds: f64,
    /// Time-weighted average.
    pub(super) average: f64,
    /// Time-weighted standard deviation.
    pub(super) deviation: f64,
    /// Highest value.
    pub(super) max: f64,
}

impl SeatDemand {
    /// A demand of zero from `now`.
    pub(super) fn new(now: Instant) -> Self {
        Self {
            value: 0.0,
            since: now,
            start: now,
            integral: 0.0,
            integral_of_squares: 0.0,
            max: 0.0,
        }
    }

    fn advance(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.since).as_secs_f64();
        self.integral += self.value * dt;
        self.integral_of_squares += self.value * self.value * dt;
        self.since = self.since.max(now);
    }

    /// The demand is `value` from `now` on.
    pub(super) fn set(&mut self, value: f64, now: Instant) {
        self.advance(now);
        self.value = value;
        self.max = self.max.max(value);
    }

    /// What the period ending `now` observed; a new period starts at the current value.
    pub(super) fn reset(&mut self, now: Instant) -> Observation {
        self.advance(now);
        let seconds = self
            .since
            .saturating_duration_since(self.start)
            .as_secs_f64();
        let (average, deviation) = if seconds > 0.0 {
            let average = self.integral / seconds;
            let variance = self.integral_of_squares / seconds - average * average;
            (average, variance.max(0.0).sqrt())
        } else {
            (self.value, 0.0)
        };
        let observation = Observation {
            seconds,
            average,
            deviation,
            max: self.max,
        };
        self.start = self.since;
        self.integral = 0.0;
        self.integral_of_squares = 0.0;
        self.max = self.value;
        observation
    }
}

/// A level's demand statistics, updated once per period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct DemandStats {
    /// The last period's average.
    pub(super) average: f64,
    /// The last period's standard deviation.
    pub(super) deviation: f64,
    /// The last period's highest demand, rounded.
    pub(super) high_watermark: usize,
    /// The smoothed envelope (average + deviation) over the periods.
    pub(super) smoothed: f64,
}

impl DemandStats {
    /// Takes in one period's observation.
    pub(super) fn update(&mut self, observed: &Observation) {
        self.high_watermark = observed.max.round().max(0.0) as usize;
        if observed.seconds <= 0.0 {
            return;
        }
        self.average = observed.average;
        self.deviation = if observed.deviation.is_nan() {
            0.0
        } else {
            observed.deviation
        };
        let envelope = self.average + self.deviation;
        self.smoothed = envelope.max(SMOOTHING * self.smoothed + (1.0 - SMOOTHING) * envelope);
    }
}

/// One level, as the adjustment sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct LevelInput {
    /// Exempt levels are never limited; they only take seats off the top.
    pub(super) exempt: bool,
    /// Its nominal limit.
    pub(super) nominal: usize,
    /// Its nominal limit less the seats it may lend.
    pub(super) lower: usize,
    /// Its nominal limit plus the seats it may borrow.
    pub(super) upper: usize,
    /// Its current limit (kept when no allocation can be computed).
    pub(super) current: usize,
    /// Its demand.
    pub(super) stats: DemandStats,
}

/// What the adjustment decided for one level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Decision {
    /// The level's new current limit.
    pub(super) current: usize,
    /// Its allocation target (limited levels only).
    pub(super) target: Option<f64>,
}

/// The adjustment of every level.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Adjustment {
    /// Per level, in the order given.
    pub(super) levels: Vec<Decision>,
    /// The fair proportion of the targets granted (0 when the lower bounds decided).
    pub(super) fair_fraction: f64,
}

/// The current limits of `levels` sharing `nominal_sum` seats (the sum of their nominal
/// limits).
pub(super) fn adjust(nominal_sum: usize, levels: &[LevelInput]) -> Adjustment {
    let mut remaining = nominal_sum as f64;
    let mut lower_sum = 0.0;
    let mut lower_current_sum = 0.0;
    let mut bounds = Vec::new();
    for level in levels {
        let stats = level.stats;
        if level.exempt {
            remaining -= level.lower.max(stats.high_watermark) as f64;
        } else {
            let lower_current = level.lower.max(level.nominal.min(stats.high_watermark));
            bounds.push(Bounds {
                lower: lower_current as f64,
                upper: level.upper as f64,
                target: (lower_current as f64).max(stats.smoothed),
            });
            lower_sum += level.lower as f64;
            lower_current_sum += lower_current as f64;
        }
    }
    let (allocations, fair_fraction) = if remaining <= lower_sum || remaining <= lower_current_sum {
        (None, 0.0)
    } else {
        match allocate(nominal_sum as f64, &bounds) {
            Some((allocations, fair)) => (Some(allocations), fair),
            None => {
                tracing::warn!(
                    ?levels,
                    "flow control: no allocation of seats satisfies the levels' bounds"
                );
                (None, 0.0)
            }
        }
    };
    let share = if lower_current_sum > lower_sum {
        ((remaining - lower_sum) / (lower_current_sum - lower_sum)).max(0.0)
    } else {
        0.0
    };
    let mut limited = 0;
    let decisions = levels
        .iter()
        .map(|level| {
            if level.exempt {
                return Decision {
                    current: level.lower.max(level.stats.high_watermark),
                    target: None,
                };
            }
            let index = limited;
            limited += 1;
            let target = bounds.get(index).map(|b| b.target);
            let lower_current = level
                .lower
                .max(level.nominal.min(level.stats.high_watermark));
            let current = if remaining <= lower_sum {
                level.lower
            } else if remaining <= lower_current_sum {
                level.lower + ((lower_current - level.lower) as f64 * share).round() as usize
            } else {
                match allocations.as_ref().and_then(|a| a.get(index)) {
                    Some(allocation) => allocation.round().max(0.0) as usize,
                    None => level.current,
                }
            };
            Decision { current, target }
        })
        .collect();
    Adjustment {
        levels: decisions,
        fair_fraction,
    }
}

/// One limited level's allocation problem.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Bounds {
    lower: f64,
    upper: f64,
    target: f64,
}

/// Allocations summing to `total`, each within its bounds, each its target times one fair
/// proportion unless a bound holds it (upstream's `computeConcurrencyAllocation`), with that
/// proportion; `None` when the bounds cannot sum to `total`.
///
/// The sum of the clamped allocations is a non-decreasing function of the proportion,
/// linear between the proportions at which some level meets a bound: the solution is found
/// on the segment where it crosses `total`.
fn allocate(total: f64, items: &[Bounds]) -> Option<(Vec<f64>, f64)> {
    let lower_sum: f64 = items.iter().map(|i| i.lower).sum();
    let upper_sum: f64 = items.iter().map(|i| i.upper).sum();
    if items
        .iter()
        .any(|i| i.lower < 0.0 || i.upper < i.lower || i.target < i.lower)
        || lower_sum - total > EPSILON
        || total - upper_sum > EPSILON
    {
        return None;
    }
    let targets: Vec<f64> = items.iter().map(|i| i.target.max(MIN_TARGET)).collect();
    let relative =
        |bound: fn(&Bounds) -> f64| items.iter().zip(&targets).map(move |(i, t)| bound(i) / t);
    if total <= 0.0 {
        return Some((vec![0.0; items.len()], 0.0));
    }
    if lower_sum - total > -EPSILON {
        let fair = relative(|i| i.lower).fold(f64::INFINITY, f64::min);
        return Some((items.iter().map(|i| i.lower).collect(), fair));
    }
    if total - upper_sum > -EPSILON {
        let fair = relative(|i| i.upper).fold(0.0, f64::max);
        return Some((items.iter().map(|i| i.upper).collect(), fair));
    }
    let sum_at = |fair: f64| -> f64 {
        items
            .iter()
            .zip(&targets)
            .map(|(i, t)| (fair * t).clamp(i.lower, i.upper))
            .sum()
    };
    let mut breakpoints: Vec<f64> = relative(|i| i.lower).chain(relative(|i| i.upper)).collect();
    breakpoints.sort_by(f64::total_cmp);
    breakpoints.dedup();
    let mut fair = breakpoints.last().copied().unwrap_or_default();
    let mut previous: Option<(f64, f64)> = None;
    for &point in &breakpoints {
        let sum = sum_at(point);
        if sum >= total {
            fair = match previous {
                Some((p, s)) if sum > s => p + (total - s) * (point - p) / (sum - s),
                _ => point,
            };
            break;
        }
        previous = Some((point, sum));
    }
    let allocations = items
        .iter()
        .zip(&targets)
        .map(|(i, t)| (fair * t).clamp(i.lower, i.upper))
        .collect();
    Some((allocations, fair))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(lower: f64, upper: f64, target: f64) -> Bounds {
        Bounds {
            lower,
            upper,
            target,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn allocations_are_proportional_to_targets_within_bounds() {
        // No bound matters: 100 split 1:3.
        let (a, fair) = allocate(100.0, &[bounds(0.0, 100.0, 10.0), bounds(0.0, 100.0, 30.0)])
            .expect("solvable");
        assert!(close(a[0], 25.0) && close(a[1], 75.0), "{a:?}");
        assert!(close(fair, 2.5));
        // The first is capped at 15: the second takes the rest.
        let (a, _) = allocate(100.0, &[bounds(0.0, 15.0, 10.0), bounds(0.0, 100.0, 30.0)])
            .expect("solvable");
        assert!(close(a[0], 15.0) && close(a[1], 85.0), "{a:?}");
        // A lower bound above its fair share holds.
        let (a, _) = allocate(
            100.0,
            &[bounds(40.0, 100.0, 40.0), bounds(0.0, 100.0, 300.0)],
        )
        .expect("solvable");
        assert!(close(a[0], 40.0) && close(a[1], 60.0), "{a:?}");
        // Impossible bounds.
        assert!(allocate(10.0, &[bounds(20.0, 30.0, 20.0)]).is_none());
        assert!(allocate(50.0, &[bounds(0.0, 30.0, 20.0)]).is_none());
        // Exactly the lower or the upper bounds.
        let (a, _) =
            allocate(20.0, &[bounds(5.0, 9.0, 5.0), bounds(15.0, 20.0, 15.0)]).expect("solvable");
        assert_eq!(a, [5.0, 15.0]);
        let (a, _) =
            allocate(29.0, &[bounds(5.0, 9.0, 5.0), bounds(15.0, 20.0, 15.0)]).expect("solvable");
        assert_eq!(a, [9.0, 20.0]);
    }

    #[test]
    fn demand_is_integrated_over_time() {
        let t0 = Instant::now();
        let mut demand = SeatDemand::new(t0);
        demand.set(4.0, t0);
        demand.set(0.0, t0 + Duration::from_secs(5));
        let seen = demand.reset(t0 + Duration::from_secs(10));
        assert!(close(seen.seconds, 10.0));
        assert!(close(seen.average, 2.0));
        assert!(close(seen.deviation, 2.0), "{seen:?}");
        assert!(close(seen.max, 4.0));
        // The next period starts from the current value.
        let seen = demand.reset(t0 + Duration::from_secs(20));
        assert!(close(seen.average, 0.0) && close(seen.max, 0.0), "{seen:?}");
        let mut stats = DemandStats::default();
        stats.update(&Observation {
            seconds: 10.0,
            average: 2.0,
            deviation: 2.0,
            max: 4.4,
        });
        assert_eq!(stats.high_watermark, 4);
        assert!(close(stats.smoothed, 4.0), "the envelope when it is higher");
        stats.update(&Observation {
            seconds: 10.0,
            average: 0.0,
            deviation: 0.0,
            max: 0.0,
        });
        assert!(close(stats.smoothed, 0.977 * 4.0), "decays slowly");
    }

    fn level(nominal: usize, lend: usize, borrow: usize, demand: f64, hw: usize) -> LevelInput {
        LevelInput {
            exempt: false,
            nominal,
            lower: nominal - lend,
            upper: nominal + borrow,
            current: nominal,
            stats: DemandStats {
                average: demand,
                deviation: 0.0,
                high_watermark: hw,
                smoothed: demand,
            },
        }
    }

    #[test]
    fn a_busy_level_borrows_what_an_idle_one_lends() {
        // Two levels of 50 seats; the idle one lends up to half of its seats.
        let idle = level(50, 25, 0, 0.0, 0);
        let busy = level(50, 0, 100, 90.0, 50);
        let adjusted = adjust(100, &[idle, busy]);
        let current: Vec<usize> = adjusted.levels.iter().map(|d| d.current).collect();
        assert_eq!(current, [25, 75], "{adjusted:?}");
        // Nothing to lend: each keeps its nominal limit.
        let adjusted = adjust(100, &[level(50, 0, 100, 0.0, 0), busy]);
        let current: Vec<usize> = adjusted.levels.iter().map(|d| d.current).collect();
        assert_eq!(current, [50, 50]);
        // Both idle: the split follows their lower bounds.
        let adjusted = adjust(100, &[idle, level(50, 0, 100, 0.0, 0)]);
        let current: Vec<usize> = adjusted.levels.iter().map(|d| d.current).collect();
        assert_eq!(current, [33, 67]);
    }

    #[test]
    fn exempt_levels_take_what_they_used_first() {
        let exempt = LevelInput {
            exempt: true,
            ..level(0, 0, 0, 0.0, 60)
        };
        // 100 seats, 60 used by exempt requests: the limited levels are held to their lower
        // limits plus a share of what is left.
        let a = level(50, 40, 100, 50.0, 50);
        let b = level(50, 40, 100, 50.0, 50);
        let adjusted = adjust(100, &[exempt, a, b]);
        let current: Vec<usize> = adjusted.levels.iter().map(|d| d.current).collect();
        // Left: 40; lower limits 10 + 10; wanted 50 + 50: each gets 10 + 40 × (40 - 20) / 80.
        assert_eq!(current, [60, 20, 20], "{adjusted:?}");
        assert_eq!(adjusted.fair_fraction, 0.0);
    }
}
