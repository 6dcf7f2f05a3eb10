//! Work no player waits for, on one thread of its own at a low scheduling priority: loading and
//! checking content for a reload, and freeing a content version once nothing uses it.
//!
//! Why a thread of its own, not `spawn_blocking`: a reload of a large world is seconds of CPU
//! and a gigabyte of allocations, and freeing the version it replaced is hundreds of
//! milliseconds more. On a 2-core machine, at the same priority as the runtime's workers, both
//! took turns with the players' steps: honest players' p99 rose several times during reloads.
//! Here the kernel runs the players' threads first (`SCHED_BATCH`, nice 10), and a version is
//! freed here rather than by whichever session happened to hold the last reference (its `close`
//! or `talk` then paid for the whole world).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

/// How often retired values are looked at to see whether they are free to drop.
const SWEEP: Duration = Duration::from_millis(250);

/// The background thread's priority on `thread-priority`'s 0 to 99 scale, which it maps onto
/// niceness 19 to -20: 22 is nice 10. The players' threads (nice 0) get about ten times its
/// share of a contended core, and it still makes progress under a steady load.
#[cfg(target_os = "linux")]
const CROSSPLATFORM_PRIORITY: u8 = 22;

type Job = Box<dyn FnOnce() + Send>;

/// Something retired: dropped on the background thread once this is its only reference.
trait Retired: Send {
    fn is_sole(&self) -> bool;
}

impl<T: Send + Sync> Retired for Arc<T> {
    fn is_sole(&self) -> bool {
        // With no weak reference, nobody can make another strong one once this is the last.
        Arc::strong_count(self) == 1 && Arc::weak_count(self) == 0
    }
}

enum Message {
    Run(Job),
    Retire(Box<dyn Retired>),
}

/// The background thread's handle. Dropping the last handle ends the thread (after it has
/// dropped what it still held).
#[derive(Debug)]
pub struct Background {
    /// `None` if the thread could not be started: work then runs on tokio's blocking pool.
    jobs: Option<std::sync::Mutex<mpsc::Sender<Message>>>,
}

/// A background job that panicked.
#[derive(Debug, thiserror::Error)]
#[error("a background job panicked: {0}")]
pub struct JobPanicked(pub String);

impl Background {
    /// Starts the thread.
    pub fn start() -> Background {
        let (sender, receiver) = mpsc::channel();
        let spawned = std::thread::Builder::new()
            .name("banter-background".into())
            .spawn(move || work(receiver));
        match spawned {
            Ok(_) => Background {
                jobs: Some(std::sync::Mutex::new(sender)),
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the background thread; reloads run on the blocking pool");
                Background { jobs: None }
            }
        }
    }

    /// Runs `job` on the background thread and waits for its answer (without holding a
    /// runtime worker). Jobs run one after another, in the order they were given.
    pub async fn run<T, F>(&self, job: F) -> Result<T, JobPanicked>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(job))
                .map_err(|panic| JobPanicked(panic_text(panic.as_ref())));
            let _ = answer.send(outcome);
        });
        let job = match self.send(Message::Run(job)) {
            Ok(()) => {
                return answered
                    .await
                    .unwrap_or_else(|_| Err(JobPanicked("the background thread is gone".into())));
            }
            Err(Message::Run(job)) => job,
            // `send` hands back the message it was given.
            Err(Message::Retire(_)) => Box::new(|| {}),
        };
        // No background thread: the blocking pool, at the runtime's priority.
        tokio::task::spawn_blocking(job)
            .await
            .map_err(|e| JobPanicked(e.to_string()))?;
        answered
            .await
            .unwrap_or_else(|_| Err(JobPanicked("the job was dropped".into())))
    }

    /// Keeps `value` until this is its last reference, then drops it on the background thread,
    /// so that no runtime worker pays for freeing it.
    pub fn retire<T: Send + Sync + 'static>(&self, value: Arc<T>) {
        // Without the thread (or after it is gone) it is dropped here, as it would have been.
        let _ = self.send(Message::Retire(Box::new(value)));
    }

    /// Drops `value` on the background thread.
    pub fn drop_later<T: Send + Sync + 'static>(&self, value: T) {
        self.retire(Arc::new(value));
    }

    fn send(&self, message: Message) -> Result<(), Message> {
        let Some(jobs) = &self.jobs else {
            return Err(message);
        };
        let jobs = jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        jobs.send(message).map_err(|mpsc::SendError(m)| m)
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The thread: lowers its own priority, then runs jobs as they come and sweeps the retired.
fn work(jobs: mpsc::Receiver<Message>) {
    lower_priority();
    let mut retired: Vec<Box<dyn Retired>> = Vec::new();
    loop {
        let wait = if retired.is_empty() {
            Duration::from_secs(3600)
        } else {
            SWEEP
        };
        match jobs.recv_timeout(wait) {
            Ok(Message::Run(job)) => job(),
            Ok(Message::Retire(value)) => retired.push(value),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
        retired.retain(|value| !value.is_sole());
    }
}

/// `SCHED_BATCH` at nice 10 for this thread alone (Linux keeps both per thread). Where that is
/// refused or unknown, the thread keeps the priority it has.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        use thread_priority::unix::{
            NormalThreadSchedulePolicy, ThreadSchedulePolicy, set_thread_priority_and_policy,
            thread_native_id,
        };
        use thread_priority::{ThreadPriority, ThreadPriorityValue};
        // The crate maps 0..=99 onto niceness 19..=-20: 22 is nice 10.
        let Ok(value) = ThreadPriorityValue::try_from(CROSSPLATFORM_PRIORITY) else {
            return;
        };
        if let Err(e) = set_thread_priority_and_policy(
            thread_native_id(),
            ThreadPriority::Crossplatform(value),
            ThreadSchedulePolicy::Normal(NormalThreadSchedulePolicy::Batch),
        ) {
            tracing::warn!(error = ?e, "the background thread keeps the normal priority");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Says on which thread it was dropped.
    struct Witness(std::sync::mpsc::Sender<Option<String>>);

    impl Drop for Witness {
        fn drop(&mut self) {
            let _ = self
                .0
                .send(std::thread::current().name().map(str::to_owned));
        }
    }

    #[tokio::test]
    async fn jobs_run_in_order_off_the_runtime_and_a_panic_is_an_answer() {
        let background = Background::start();
        let thread = background
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .expect("ran");
        assert_eq!(thread.as_deref(), Some("banter-background"));
        let panicked = background
            .run(|| -> u32 { panic!("the loader broke") })
            .await
            .expect_err("a panic");
        assert!(
            panicked.to_string().contains("the loader broke"),
            "{panicked}"
        );
        // The thread outlives the panic.
        assert_eq!(background.run(|| 7).await.expect("ran"), 7);
    }

    #[tokio::test]
    async fn a_retired_value_is_dropped_on_the_background_thread_once_nobody_holds_it() {
        let background = Background::start();
        let (dropped, drops) = std::sync::mpsc::channel();
        let value = Arc::new(Witness(dropped));
        let session = value.clone();
        background.retire(value);
        // Still held by the "session": not dropped after several sweeps.
        assert!(drops.recv_timeout(SWEEP * 4).is_err());
        drop(session);
        let thread = drops
            .recv_timeout(Duration::from_secs(30))
            .expect("dropped");
        assert_eq!(thread.as_deref(), Some("banter-background"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_thread_runs_batch_at_nice_10() {
        let background = Background::start();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        // Field 19 of /proc/thread-self/stat is the niceness; `policy` is field 41.
        let stat = runtime
            .block_on(background.run(|| std::fs::read_to_string("/proc/thread-self/stat")))
            .expect("ran");
        let Ok(stat) = stat else {
            return; // no procfs: nothing to read the priority from
        };
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map_or("", |(_, rest)| rest)
            .split_whitespace()
            .collect();
        // After the command's `)`, field 3 (state) is index 0.
        assert_eq!(fields.get(19 - 3), Some(&"10"), "{stat}");
        assert_eq!(fields.get(41 - 3), Some(&"3"), "SCHED_BATCH is 3: {stat}");
    }
}
