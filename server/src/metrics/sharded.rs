//! Series the hot path records into once a message: a counter and a histogram kept in one slot
//! per thread ([`SHARDS`] of them, each on cache lines of its own), summed when they are served.
//!
//! `prometheus-client`'s `Histogram` takes a mutex for every observation and its `Counter` is
//! one atomic: shared by the runtime's workers, each message moved that lock's or that counter's
//! cache line from one core to the other (BENCHMARKS.md, issue 37, sixth pass). Here a thread
//! only writes its own slot: an uncontended relaxed add, no lock, no line in flight between
//! cores. A scrape reads every slot; it may see one series a message ahead of another, never a
//! histogram whose `_count` differs from its buckets' sum.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Slots per series: threads beyond this many share slots (still correct, merely contended).
const SHARDS: usize = 16;

/// A value on cache lines of its own: 128 bytes, since a core's adjacent-line prefetch pulls
/// lines in pairs.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Own<T>(T);

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot, handed out in turn as threads first record something.
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
}

fn shard() -> usize {
    SHARD.with(|shard| *shard)
}

/// A monotonically increasing count, served as a Prometheus counter.
#[derive(Clone, Debug, Default)]
pub struct ShardedCounter(Arc<[Own<AtomicU64>; SHARDS]>);

impl ShardedCounter {
    pub fn inc(&self) {
        self.0[shard()].0.fetch_add(1, Ordering::Relaxed);
    }

    /// The count over every thread's slot.
    pub fn get(&self) -> u64 {
        self.0
            .iter()
            .map(|slot| slot.0.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

impl TypedMetric for ShardedCounter {
    const TYPE: MetricType = MetricType::Counter;
}

impl EncodeMetric for ShardedCounter {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_counter::<NoLabelSet, _, u64>(&self.get(), None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// One thread's observations: a count per bucket (the last one past every bound) and the sum.
#[derive(Debug)]
struct Observations<const N: usize> {
    buckets: [AtomicU64; N],
    overflow: AtomicU64,
    sum_ns: AtomicU64,
}

impl<const N: usize> Default for Observations<N> {
    fn default() -> Self {
        Observations {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            overflow: AtomicU64::new(0),
            sum_ns: AtomicU64::new(0),
        }
    }
}

/// Durations in `N` buckets of upper bounds given in seconds (plus `+Inf`), served as a
/// Prometheus histogram exactly as `prometheus-client`'s `Histogram` with those bounds is.
#[derive(Clone, Debug)]
pub struct ShardedHistogram<const N: usize> {
    bounds: [f64; N],
    /// `bounds` in nanoseconds, what an observation is compared with.
    bounds_ns: [u64; N],
    slots: Arc<[Own<Observations<N>>; SHARDS]>,
}

impl<const N: usize> ShardedHistogram<N> {
    /// A histogram with these upper bounds, in seconds, in increasing order.
    pub fn new(bounds: [f64; N]) -> Self {
        ShardedHistogram {
            bounds,
            bounds_ns: bounds.map(|seconds| (seconds * 1e9).round() as u64),
            slots: Arc::new(std::array::from_fn(|_| Own::default())),
        }
    }

    pub fn observe(&self, took: Duration) {
        let ns = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let slot = &self.slots[shard()].0;
        match self.bounds_ns.iter().position(|&bound| ns <= bound) {
            Some(i) => slot.buckets[i].fetch_add(1, Ordering::Relaxed),
            None => slot.overflow.fetch_add(1, Ordering::Relaxed),
        };
        slot.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The sum in seconds, the count, and each bucket's own count (not cumulative) with its
    /// bound, `+Inf` last: what `MetricEncoder::encode_histogram` takes.
    fn snapshot(&self) -> (f64, u64, Vec<(f64, u64)>) {
        let mut buckets: Vec<(f64, u64)> = self
            .bounds
            .iter()
            .chain(std::iter::once(&f64::INFINITY))
            .map(|&bound| (bound, 0))
            .collect();
        let mut sum_ns = 0u64;
        for slot in self.slots.iter() {
            let slot = &slot.0;
            let counts = slot.buckets.iter().chain(std::iter::once(&slot.overflow));
            for ((_, total), count) in buckets.iter_mut().zip(counts) {
                *total = total.wrapping_add(count.load(Ordering::Relaxed));
            }
            sum_ns = sum_ns.wrapping_add(slot.sum_ns.load(Ordering::Relaxed));
        }
        let count = buckets
            .iter()
            .map(|(_, n)| n)
            .fold(0, |a: u64, n| a.wrapping_add(*n));
        (sum_ns as f64 / 1e9, count, buckets)
    }
}

impl<const N: usize> TypedMetric for ShardedHistogram<N> {
    const TYPE: MetricType = MetricType::Histogram;
}

impl<const N: usize> EncodeMetric for ShardedHistogram<N> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.snapshot();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use prometheus_client::encoding::text::encode;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    use super::*;

    fn exposition(register: impl FnOnce(&mut Registry)) -> String {
        let mut registry = Registry::default();
        register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).expect("a registry encodes");
        text
    }

    /// The `_sum` line's value, and the exposition without it.
    fn split_sum(text: &str) -> (f64, String) {
        let (sums, rest): (Vec<&str>, Vec<&str>) = text
            .lines()
            .partition(|line| line.starts_with("handling_seconds_sum "));
        let sum = sums
            .first()
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse().ok())
            .expect("one _sum line");
        (sum, rest.join("\n"))
    }

    #[test]
    fn threads_count_into_their_own_slots_and_a_scrape_sums_them() {
        let counter = ShardedCounter::default();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| (0..1000).for_each(|_| counter.inc()));
            }
        });
        counter.inc();
        assert_eq!(counter.get(), 4001);
        let nonzero = counter
            .0
            .iter()
            .filter(|slot| slot.0.load(Ordering::Relaxed) > 0);
        assert!(nonzero.count() >= 2, "the threads wrote more than one slot");
    }

    #[test]
    fn the_histogram_is_served_as_prometheus_clients_own_with_the_same_observations() {
        let bounds = [0.000_01, 0.000_1, 0.001];
        let observed =
            [3u64, 10, 10, 99, 100, 101, 1_000, 5_000, 2_000_000].map(Duration::from_micros);
        let sharded = ShardedHistogram::new(bounds);
        let reference = Histogram::new(bounds);
        std::thread::scope(|scope| {
            for chunk in observed.chunks(3) {
                let sharded = &sharded;
                scope.spawn(move || chunk.iter().for_each(|&took| sharded.observe(took)));
            }
        });
        observed
            .iter()
            .for_each(|took| reference.observe(took.as_secs_f64()));
        let ours = exposition(|r| r.register("handling_seconds", "h", sharded.clone()));
        let theirs = exposition(|r| r.register("handling_seconds", "h", reference.clone()));
        // The sums are added differently (whole nanoseconds here, seconds as `f64` there), so
        // they are compared as numbers; every other line is the same text.
        let (ours_sum, ours) = split_sum(&ours);
        let (theirs_sum, theirs) = split_sum(&theirs);
        assert_eq!(ours, theirs);
        assert!(
            (ours_sum - theirs_sum).abs() < 1e-12,
            "{ours_sum} {theirs_sum}"
        );
        assert!((ours_sum - 2.006_323).abs() < 1e-12, "{ours_sum}");
        assert!(ours.contains("handling_seconds_count 9"), "{ours}");
    }

    #[test]
    fn a_counter_is_served_as_prometheus_clients_own() {
        let sharded = ShardedCounter::default();
        let reference = prometheus_client::metrics::counter::Counter::<u64>::default();
        for _ in 0..7 {
            sharded.inc();
            reference.inc();
        }
        let ours = exposition(|r| r.register("messages", "m", sharded.clone()));
        let theirs = exposition(|r| r.register("messages", "m", reference.clone()));
        assert_eq!(ours, theirs);
    }
}
