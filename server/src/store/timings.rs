//! [`WriteTimings`]: where a SQLite write's time goes, served on `/metrics`.
//!
//! SQLite has one writer, so a player's quest write can be slow for three reasons that look the
//! same from outside: it waited at the [`WriteGate`](super::write_gate::WriteGate) behind
//! another writer's turn, its own turn was long, or its COMMIT (the fsync) was. Honest players'
//! tail under abuse (RELIABILITY.md, scenario 6) could not be told apart from the disk's own
//! stalls without these; each is a histogram:
//!
//! - `banter_store_write_turn_wait_seconds{priority}`: from asking for a turn to getting it;
//! - `banter_store_write_turn_held_seconds{priority}`: from getting a turn to handing it over;
//! - `banter_store_commit_seconds{lane}`: a group commit lane's COMMIT, the fsync included on
//!   the players' lane;
//! - `banter_store_checkpoint_seconds`: a WAL checkpoint, run beside the writers (it holds no
//!   turn).
//!
//! Recording is a histogram observation (atomics, no lock on the path once the handles exist).
//! The families are shared handles: the store records into them, `Metrics` serves them.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

use super::write_gate::Priority;

/// Upper bounds of the write-time buckets, in seconds: 50 µs to 2.5 s, since a disk's flush can
/// take half a second (RELIABILITY.md, scenario 6, seventh round).
pub const WRITE_BUCKETS: [f64; 15] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
    1.0, 2.5,
];

/// A gate queue, as a label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PriorityLabels {
    /// `player` or `housekeeping`.
    pub priority: &'static str,
}

/// A group commit lane, as a label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LaneLabels {
    /// `players` or `housekeeping`.
    pub lane: &'static str,
}

/// A family of write-time histograms by `L`.
pub type WriteHistograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn write_histogram() -> Histogram {
    Histogram::new(WRITE_BUCKETS)
}

/// The SQLite store's write timings (see the module docs). Cloning shares them.
#[derive(Clone, Debug)]
pub struct WriteTimings {
    /// Waiting for a turn, by priority.
    pub turn_wait: WriteHistograms<PriorityLabels>,
    /// Holding a turn, by priority.
    pub turn_held: WriteHistograms<PriorityLabels>,
    /// A lane's COMMIT, by lane.
    pub commit: WriteHistograms<LaneLabels>,
    /// A WAL checkpoint.
    pub checkpoint: Histogram,
    /// `turn_wait` and `turn_held`'s series, by [`Priority::index`]: no map lookup per write.
    waits: [Histogram; 2],
    helds: [Histogram; 2],
}

impl Default for WriteTimings {
    fn default() -> Self {
        let turn_wait = WriteHistograms::<PriorityLabels>::new_with_constructor(write_histogram);
        let turn_held = WriteHistograms::<PriorityLabels>::new_with_constructor(write_histogram);
        let series = |family: &WriteHistograms<PriorityLabels>| {
            Priority::ALL.map(|p| {
                family
                    .get_or_create(&PriorityLabels {
                        priority: p.label(),
                    })
                    .clone()
            })
        };
        WriteTimings {
            waits: series(&turn_wait),
            helds: series(&turn_held),
            turn_wait,
            turn_held,
            commit: WriteHistograms::<LaneLabels>::new_with_constructor(write_histogram),
            checkpoint: write_histogram(),
        }
    }
}

impl WriteTimings {
    /// A writer of `priority` waited `seconds` for its turn.
    pub fn waited(&self, priority: Priority, seconds: f64) {
        self.waits[priority.index()].observe(seconds);
    }

    /// A writer of `priority` held its turn `seconds`.
    pub fn held(&self, priority: Priority, seconds: f64) {
        self.helds[priority.index()].observe(seconds);
    }

    /// The COMMIT histogram of `lane`, to keep and record into.
    pub fn commit_of(&self, lane: &'static str) -> Histogram {
        self.commit.get_or_create(&LaneLabels { lane }).clone()
    }
}

/// Runs `work`, recording how long it took into `seconds`, whatever it returns.
pub async fn timed<T>(seconds: &Histogram, work: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let output = work.await;
    seconds.observe(started.elapsed().as_secs_f64());
    output
}
