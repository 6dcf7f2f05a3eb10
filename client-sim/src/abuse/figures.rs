//! What the abusers count while they run: atomic counters, tallies by label, and distributions
//! kept in an HDR histogram (fixed memory, exact counts, no sort at the end).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hdrhistogram::Histogram;
use serde::Serialize;

/// Figures are recorded in thousandths of their unit (milliseconds for seconds, microseconds
/// for milliseconds), and reported to three decimals.
const SCALE: f64 = 1000.0;

/// A distribution's summary (seconds or milliseconds, as the field says).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Spread {
    pub count: usize,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub max: f64,
}

impl Spread {
    /// The summary of a histogram of values recorded in thousandths (three significant digits:
    /// a figure is within 0.1 % of the value it stands for).
    pub fn of(h: &Histogram<u64>) -> Spread {
        if h.is_empty() {
            return Spread::default();
        }
        let unit = |v: u64| v as f64 / SCALE;
        Spread {
            count: usize::try_from(h.len()).unwrap_or(usize::MAX),
            min: unit(h.min()),
            p50: unit(h.value_at_quantile(0.5)),
            p90: unit(h.value_at_quantile(0.9)),
            max: unit(h.max()),
        }
    }

    /// `min … / p50 … / p90 … / max … unit`, or `-` when nothing was measured.
    pub fn text(&self, unit: &str) -> String {
        if self.count == 0 {
            "-".to_owned()
        } else {
            format!(
                "min {} / p50 {} / p90 {} / max {} {unit}",
                self.min, self.p50, self.p90, self.max
            )
        }
    }
}

/// Samples of a distribution, in an HDR histogram shared by the abuser's tasks.
pub struct Samples(Mutex<Histogram<u64>>);

impl Default for Samples {
    fn default() -> Self {
        // Three significant digits, growing to whatever range is recorded.
        let histogram = Histogram::new(3).expect("3 significant digits is a valid precision");
        Samples(Mutex::new(histogram))
    }
}

impl Samples {
    /// Records `value` (not negative; a negative or non-finite one counts as 0).
    pub fn push(&self, value: f64) {
        let scaled = (value * SCALE).round();
        let scaled = if scaled.is_finite() && scaled > 0.0 {
            scaled as u64
        } else {
            0
        };
        if let Ok(mut h) = self.0.lock() {
            // `record` grows the histogram to the value; only past u64 range does it saturate.
            if h.record(scaled).is_err() {
                h.saturating_record(scaled);
            }
        }
    }

    pub fn spread(&self) -> Spread {
        self.0.lock().map(|h| Spread::of(&h)).unwrap_or_default()
    }
}

/// Counts by label.
#[derive(Default)]
pub struct Tally(Mutex<BTreeMap<String, u64>>);

impl Tally {
    pub fn add(&self, label: impl Into<String>) {
        if let Ok(mut map) = self.0.lock() {
            *map.entry(label.into()).or_insert(0) += 1;
        }
    }

    pub fn take(&self) -> BTreeMap<String, u64> {
        self.0.lock().map(|m| m.clone()).unwrap_or_default()
    }
}

/// `label: n, label: n`, or `-` for an empty tally.
pub fn tally_text(map: &BTreeMap<String, u64>) -> String {
    if map.is_empty() {
        return "-".to_owned();
    }
    map.iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn add(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

pub fn get(counter: &AtomicU64) -> u64 {
    counter.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= b.abs() * 0.001
    }

    #[test]
    fn spreads_come_from_the_histogram_within_a_thousandth() {
        let samples = Samples::default();
        for v in (1..=10).rev() {
            samples.push(f64::from(v));
        }
        let s = samples.spread();
        assert_eq!(s.count, 10);
        assert!(close(s.min, 1.0), "{s:?}");
        assert!(close(s.p50, 5.0), "{s:?}");
        assert!(close(s.p90, 9.0), "{s:?}");
        assert!(close(s.max, 10.0), "{s:?}");
        assert_eq!(Samples::default().spread(), Spread::default());
        let one = Samples::default();
        one.push(1.5);
        let s = one.spread();
        assert_eq!((s.count, s.p50, s.p90), (1, 1.5, 1.5));
        assert_eq!(s.text("s"), "min 1.5 / p50 1.5 / p90 1.5 / max 1.5 s");
        assert_eq!(Spread::default().text("s"), "-");
    }

    #[test]
    fn small_figures_and_odd_values_are_kept() {
        let samples = Samples::default();
        samples.push(0.0);
        samples.push(-1.0);
        samples.push(f64::NAN);
        samples.push(0.001);
        let s = samples.spread();
        assert_eq!((s.count, s.min, s.max), (4, 0.0, 0.001));
        // Counts stay exact however many samples come (the old list kept 200,000).
        let many = Samples::default();
        for k in 0..300_000u32 {
            many.push(f64::from(k % 1000));
        }
        assert_eq!(many.spread().count, 300_000);
    }

    #[test]
    fn tallies_count_by_label() {
        let t = Tally::default();
        t.add("401");
        t.add("401");
        t.add("closed");
        assert_eq!(tally_text(&t.take()), "401: 2, closed: 1");
        assert_eq!(tally_text(&BTreeMap::new()), "-");
    }
}
