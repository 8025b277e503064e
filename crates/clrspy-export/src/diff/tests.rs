use super::*;

fn c(base_per: f64, new_per: f64, interval: Option<(f64, f64)>, material: bool) -> Compared {
    Compared {
        base: base_per,
        new: new_per,
        base_per,
        new_per,
        interval,
        material,
    }
}

#[test]
fn a_change_inside_the_noise_is_noise_however_large() {
    let v = judge(&c(1.0, 1.5, Some((0.9, 2.4)), true), 0.10, Class::Cpu);
    assert_eq!(v, Verdict::Noise);
}

#[test]
fn a_sure_change_under_the_threshold_is_below_it() {
    let v = judge(&c(1.0, 1.05, Some((1.02, 1.08)), true), 0.10, Class::Cpu);
    assert_eq!(v, Verdict::BelowThreshold);
}

#[test]
fn a_sure_change_over_the_threshold_is_a_regression_or_an_improvement() {
    let v = judge(&c(1.0, 1.2, Some((1.12, 1.28)), true), 0.10, Class::Cpu);
    assert_eq!(v, Verdict::Regression);
    let v = judge(&c(1.0, 0.7, Some((0.6, 0.8)), true), 0.10, Class::Cpu);
    assert_eq!(v, Verdict::Improvement);
    // A route's share of the requests moves with the load's mix.
    let v = judge(&c(1.0, 2.0, Some((1.8, 2.2)), true), 0.20, Class::Requests);
    assert_eq!(v, Verdict::Changed);
}

#[test]
fn a_small_row_is_never_judged() {
    let v = judge(&c(1.0, 3.0, Some((2.0, 4.0)), false), 0.10, Class::Cpu);
    assert_eq!(v, Verdict::BelowThreshold);
}

#[test]
fn rates_are_per_unit_of_work() {
    // Twice the samples over twice the requests: the same cost per request.
    let f = |v: f64| Figure::Rate {
        value: v,
        count: v,
        exposure: None,
    };
    let r = rates(
        Some(&f(1000.0)),
        Some(&f(2000.0)),
        100.0,
        200.0,
        Some(1e4),
        Some(2e4),
        1.0,
    );
    assert_eq!((r.base_per, r.new_per), (10.0, 10.0));
    assert_eq!(judge(&r, 0.10, Class::Cpu), Verdict::Noise);
    // 25 % more per request, over thousands of samples.
    let r = rates(
        Some(&f(4000.0)),
        Some(&f(5000.0)),
        100.0,
        100.0,
        Some(1e5),
        Some(1e5),
        1.0,
    );
    assert_eq!(judge(&r, 0.10, Class::Cpu), Verdict::Regression);
    // A row that appears from nothing, often enough.
    let r = rates(
        None,
        Some(&f(500.0)),
        100.0,
        100.0,
        Some(1e3),
        Some(1e3),
        1.0,
    );
    assert_eq!(r.interval.unwrap().1, f64::INFINITY);
    assert_eq!(judge(&r, 0.20, Class::Exceptions), Verdict::Regression);
}

#[test]
fn measured_values_centre_the_count_interval() {
    // Values (ms) grew 30 % while the samples grew 20 %: the interval moves with the values.
    let b = Figure::Rate {
        value: 1000.0,
        count: 1000.0,
        exposure: None,
    };
    let n = Figure::Rate {
        value: 1300.0,
        count: 1200.0,
        exposure: None,
    };
    let r = rates(Some(&b), Some(&n), 1.0, 1.0, None, None, 1.0);
    let (lo, hi) = r.interval.unwrap();
    assert!(lo < 1.3 && hi > 1.3, "{lo} {hi}");
}

#[test]
fn a_percentage_is_over_its_own_exposure() {
    let f = |errors: f64, of: f64| Figure::Rate {
        value: errors,
        count: errors,
        exposure: Some(of),
    };
    let r = rates(
        Some(&f(10.0, 1000.0)),
        Some(&f(60.0, 2000.0)),
        5.0,
        9.0,
        None,
        None,
        1.0,
    );
    assert_eq!((r.base_per, r.new_per), (1.0, 3.0));
    assert_eq!(judge(&r, 0.20, Class::Errors), Verdict::Regression);
}

#[test]
fn percentiles_compare_by_their_rank_intervals() {
    let sketch = |shift: i64| {
        let mut s = clrspy_analysis::sketch::Sketch::new();
        for i in 0..2000i64 {
            s.add((1_000 + i % 100 * 10 + shift) * 1000);
        }
        s
    };
    let q = |s| Figure::Quantile { sketch: s, q: 0.99 };
    let same = quantiles(Some(&q(sketch(0))), Some(&q(sketch(0))), 0.99, 1.0);
    assert_eq!(judge(&same, 0.20, Class::P99), Verdict::Noise);
    let slower = quantiles(Some(&q(sketch(0))), Some(&q(sketch(1_000))), 0.99, 4.0);
    assert!(
        slower.new_per > slower.base_per * 1.4,
        "{} {}",
        slower.base_per,
        slower.new_per
    );
    assert_eq!(judge(&slower, 0.20, Class::P99), Verdict::Regression);
}
