//! What sampling alone can explain: the interval of a change between two traces.
//!
//! Two kinds of figure are compared:
//! - **rates** (samples, allocation ticks, exceptions, GCs, waits per unit of work): each
//!   side's count is taken as a Poisson count over its units of work. If nothing changed, a
//!   count seen in both traces splits between them in proportion to their units, so the new
//!   trace's share of the two is a binomial proportion; Wilson's score interval of that share,
//!   turned back into a ratio of rates, is the interval of the change ([`rate_ratio`]). Sums of
//!   events of unequal sizes (pause or wait time) count as fewer events: their effective count
//!   is `n · mean² / mean of squares` ([`effective_count`]).
//! - **percentiles** (a route's p50, p95, p99): the interval of each side's percentile from the
//!   ranks its count allows (the order statistics' binomial interval), and the change's
//!   interval from the two ([`quantile_bounds`]).
//!
//! Two recordings of one build differ by more than Poisson counts would (the JIT, the GC and
//! the scheduler do not repeat exactly): each class of figure's variance is taken as a
//! measured multiple of the Poisson variance (`Class::dispersion`), its counts divided by it.
//! Both use [`Z`] standard deviations: a diff compares hundreds of rows, and at 1.96 one row in
//! twenty of two identical recordings would look changed.

/// Standard deviations the intervals span (3: 99.7 % two-sided).
pub(crate) const Z: f64 = 3.0;

/// The interval of the ratio of the new rate to the base rate (`new/new_units` over
/// `base/base_units`), for effective counts `base` and `new`: `(low, high)`, `high` infinite
/// when the base count is 0. `None` when neither side counted anything.
pub(crate) fn rate_ratio(
    base: f64,
    new: f64,
    base_units: f64,
    new_units: f64,
) -> Option<(f64, f64)> {
    let n = base + new;
    if n <= 0.0 || base_units <= 0.0 || new_units <= 0.0 {
        return None;
    }
    let (lo, hi) = wilson(new / n, n, Z);
    let odds = |p: f64| {
        if p >= 1.0 {
            f64::INFINITY
        } else {
            p / (1.0 - p)
        }
    };
    let exposure = base_units / new_units;
    // Nothing in the base: no rate is too high to explain.
    let hi = if base > 0.0 {
        odds(hi) * exposure
    } else {
        f64::INFINITY
    };
    Some((odds(lo) * exposure, hi))
}

/// Wilson's score interval of a binomial proportion `p` over `n` trials at `z`.
fn wilson(p: f64, n: f64, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).max(0.0).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The effective Poisson count of a sum of events of sizes `sizes`: as many events of equal
/// size would vary as much (`n · mean² / mean of squares`; `n` when they are equal).
pub(crate) fn effective_count(sizes: impl Iterator<Item = f64>) -> f64 {
    let (mut n, mut sum, mut squares) = (0.0, 0.0, 0.0);
    for s in sizes {
        n += 1.0;
        sum += s;
        squares += s * s;
    }
    if squares <= 0.0 {
        return n;
    }
    sum * sum / squares
}

/// The ranks (0..1) that bound the `q` quantile of `n` values, their binomial variance times
/// `dispersion`: the quantile lies between the values at these ranks with the confidence [`Z`]
/// gives.
pub(crate) fn quantile_bounds(q: f64, n: u64, dispersion: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let sd = (q * (1.0 - q) * dispersion / n as f64).sqrt();
    ((q - Z * sd).max(0.0), (q + Z * sd).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_rates_give_an_interval_around_one() {
        let (lo, hi) = rate_ratio(1000.0, 1000.0, 10.0, 10.0).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        // ±3 sd of a share of 2000 trials: about ±14 % on the ratio.
        assert!(lo > 0.85 && hi < 1.16, "{lo} {hi}");
    }

    #[test]
    fn units_scale_the_ratio() {
        // Twice the count over twice the work: the same rate.
        let (lo, hi) = rate_ratio(1000.0, 2000.0, 10.0, 20.0).unwrap();
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        // Twice the count over the same work: twice the rate.
        let (lo, hi) = rate_ratio(1000.0, 2000.0, 10.0, 10.0).unwrap();
        assert!(lo > 1.7 && hi < 2.35, "{lo} {hi}");
    }

    #[test]
    fn a_count_from_nothing_has_no_upper_bound_and_a_low_one_from_its_size() {
        let (lo, hi) = rate_ratio(0.0, 50.0, 10.0, 10.0).unwrap();
        assert!(hi.is_infinite());
        assert!(lo > 1.0, "{lo}");
        // Two events from nothing is what chance does.
        let (lo, _) = rate_ratio(0.0, 2.0, 10.0, 10.0).unwrap();
        assert!(lo < 1.0, "{lo}");
        assert!(rate_ratio(0.0, 0.0, 1.0, 1.0).is_none());
    }

    #[test]
    fn unequal_sizes_count_as_fewer_events() {
        assert_eq!(effective_count([2.0, 2.0, 2.0].into_iter()), 3.0);
        let n = effective_count([1.0, 1.0, 1.0, 9.0].into_iter());
        assert!(n > 1.0 && n < 2.0, "{n}");
        assert_eq!(effective_count(std::iter::empty()), 0.0);
    }

    #[test]
    fn quantile_ranks_narrow_with_the_count() {
        let (lo, hi) = quantile_bounds(0.5, 100, 1.0);
        assert!((lo - 0.35).abs() < 1e-9 && (hi - 0.65).abs() < 1e-9);
        let (lo, hi) = quantile_bounds(0.99, 10_000, 1.0);
        assert!(lo > 0.986 && hi < 0.994, "{lo} {hi}");
        assert_eq!(quantile_bounds(0.99, 10, 1.0).1, 1.0);
        // Four times the variance: twice the width.
        let (lo, hi) = quantile_bounds(0.5, 100, 4.0);
        assert!((lo - 0.2).abs() < 1e-9 && (hi - 0.8).abs() < 1e-9);
    }
}
