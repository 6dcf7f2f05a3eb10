//! Open-loop latency: the dialogue step at fixed offered rates, each message sent on a schedule
//! and its round trip measured from its *scheduled* time (no coordinated omission), so a server
//! that falls behind shows it in the percentiles; the knee is the first rate that breaks.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::machine::Machine;
use super::round_to;
use super::script::{Answer, Lane, Phase, classify};
use super::target::{ANSWER_TIMEOUT, Target, Ws, open_all, step_session};
use crate::error::{Result, SimError};
use crate::report::{micros, table};
use crate::session::new_histogram;

/// How the open-loop latency runs.
#[derive(Clone, Debug)]
pub struct OpenLoopOptions {
    pub target: Target,
    pub connections: usize,
    pub rates: Vec<u64>,
    pub seconds: f64,
    /// The knee: p99 above this many times the lowest rate's p99.
    pub knee_factor: f64,
}

/// One offered rate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RatePoint {
    pub offered_per_sec: u64,
    pub achieved_per_sec: f64,
    pub messages: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
    pub errors: u64,
}

/// The open-loop result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpenLoopReport {
    pub machine: Machine,
    pub connections: usize,
    pub seconds_per_rate: f64,
    pub knee_factor: f64,
    pub rates: Vec<RatePoint>,
    /// The first rate whose p99 exceeds `knee_factor` × the lowest rate's p99, or whose
    /// achieved rate is under 95 % of the offered one.
    pub knee_per_sec: Option<u64>,
    pub knee_reason: Option<String>,
    pub error_samples: Vec<String>,
}

/// What one connection measured at one rate.
struct Measured {
    histogram: Histogram<u64>,
    answers: u64,
    errors: u64,
    sample: Option<String>,
}

/// Sends on a schedule from one task and reads answers in another; latency is counted from
/// each message's scheduled time.
async fn open_loop_lane(
    ws: Ws,
    lane: &mut Lane,
    interval: Duration,
    first: Instant,
    deadline: Instant,
) -> Result<(Ws, Measured)> {
    let (mut sink, mut stream) = ws.split();
    let (scheduled_tx, mut scheduled_rx) = mpsc::unbounded_channel::<Instant>();
    let sent = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(tokio::sync::Notify::new());
    let (reader_sent, reader_finished) = (sent.clone(), finished.clone());
    let reader = tokio::spawn(async move {
        let mut m = Measured {
            histogram: new_histogram()?,
            answers: 0,
            errors: 0,
            sample: None,
        };
        let mut sender_done = false;
        loop {
            if sender_done && m.answers >= reader_sent.load(Ordering::Acquire) {
                break;
            }
            let frame = tokio::select! {
                frame = tokio::time::timeout(ANSWER_TIMEOUT, stream.next()) => frame,
                () = reader_finished.notified(), if !sender_done => {
                    sender_done = true;
                    continue;
                }
            };
            let frame = match frame {
                Ok(Some(Ok(frame))) => frame,
                Ok(Some(Err(e))) => return Err::<_, SimError>(e.into()),
                Ok(None) => return Err(SimError::Closed),
                Err(_) => {
                    if m.answers < reader_sent.load(Ordering::Acquire) {
                        return Err(SimError::Timeout(ANSWER_TIMEOUT));
                    }
                    continue;
                }
            };
            let Message::Text(text) = frame else { continue };
            let answer = classify(text.as_str());
            if answer == Answer::Other {
                continue;
            }
            // The schedule was queued before the message went out, so it is here.
            let Some(at) = scheduled_rx.recv().await else {
                return Err(SimError::Protocol(format!(
                    "an answer nobody asked for: {text}"
                )));
            };
            let now = Instant::now();
            m.answers += 1;
            if answer == Answer::Error {
                m.errors += 1;
                m.sample.get_or_insert_with(|| text.as_str().to_owned());
            }
            let us =
                u64::try_from(now.saturating_duration_since(at).as_micros()).unwrap_or(u64::MAX);
            m.histogram.saturating_record(us.max(1));
        }
        Ok((stream, m))
    });

    // The sender: every message whose time has come goes out, then one flush.
    let mut next = first;
    let send_result: Result<()> = async {
        while next < deadline {
            tokio::time::sleep_until(next).await;
            let now = Instant::now();
            while next <= now && next < deadline {
                let _ = scheduled_tx.send(next);
                sink.feed(lane.next(Phase::Step)).await?;
                sent.fetch_add(1, Ordering::Release);
                next += interval;
            }
            sink.flush().await?;
        }
        Ok(())
    }
    .await;
    finished.notify_one();
    drop(scheduled_tx);
    let (stream, measured) = match reader.await {
        Ok(Ok(x)) => x,
        Ok(Err(e)) => return Err(e),
        Err(e) => return Err(SimError::Other(e.to_string())),
    };
    send_result?;
    let ws = sink
        .reunite(stream)
        .map_err(|_| SimError::Other("cannot reunite the socket".to_owned()))?;
    Ok((ws, measured))
}

/// The dialogue step at each offered rate in turn, open loop.
pub async fn open_loop(options: OpenLoopOptions) -> Result<OpenLoopReport> {
    let target = Arc::new(options.target.clone());
    let sessions = open_all(options.connections, 32, |i| {
        let target = target.clone();
        async move { step_session(&target, i).await }
    })
    .await?;
    let mut lanes: Vec<(Ws, Lane)> = sessions
        .into_iter()
        .map(|ws| (ws, Lane { lap: 0, next_id: 4 }))
        .collect();
    let mut report = OpenLoopReport {
        machine: Machine::probe(),
        connections: options.connections,
        seconds_per_rate: options.seconds,
        knee_factor: options.knee_factor,
        ..OpenLoopReport::default()
    };
    let length = Duration::from_secs_f64(options.seconds);
    for &rate in &options.rates {
        let per_lane = rate as f64 / lanes.len() as f64;
        let interval = Duration::from_secs_f64(1.0 / per_lane);
        let start = Instant::now() + Duration::from_millis(50);
        let deadline = start + length;
        let n = lanes.len();
        let mut tasks = Vec::with_capacity(n);
        for (i, (ws, mut lane)) in lanes.drain(..).enumerate() {
            // Lanes are staggered across one interval, so the offered load is smooth.
            let first = start + interval.mul_f64(i as f64 / n as f64);
            tasks.push(tokio::spawn(async move {
                let result = open_loop_lane(ws, &mut lane, interval, first, deadline).await;
                (result, lane)
            }));
        }
        let mut histogram = new_histogram()?;
        let mut point = RatePoint {
            offered_per_sec: rate,
            ..RatePoint::default()
        };
        for task in tasks {
            let (result, lane) = task.await.map_err(|e| SimError::Other(e.to_string()))?;
            match result {
                Ok((ws, m)) => {
                    let _ = histogram.add(&m.histogram);
                    point.messages += m.answers;
                    point.errors += m.errors;
                    if let Some(sample) = m.sample
                        && report.error_samples.len() < 10
                    {
                        report.error_samples.push(sample);
                    }
                    lanes.push((ws, lane));
                }
                Err(e) => {
                    point.errors += 1;
                    if report.error_samples.len() < 10 {
                        report.error_samples.push(e.to_string());
                    }
                }
            }
        }
        point.achieved_per_sec = round_to(point.messages as f64 / options.seconds, 0);
        if !histogram.is_empty() {
            point.p50_us = histogram.value_at_quantile(0.5);
            point.p99_us = histogram.value_at_quantile(0.99);
            point.p999_us = histogram.value_at_quantile(0.999);
            point.max_us = histogram.max();
        }
        report.rates.push(point);
        if lanes.is_empty() {
            break;
        }
    }
    for (mut ws, _) in lanes {
        let _ = ws.close(None).await;
    }
    (report.knee_per_sec, report.knee_reason) = knee(&report.rates, options.knee_factor);
    Ok(report)
}

/// The first rate where the p99 passes `factor` × the lowest rate's p99, or the server no
/// longer keeps up (achieved under 95 % of offered), with the reason.
pub fn knee(points: &[RatePoint], factor: f64) -> (Option<u64>, Option<String>) {
    let Some(base) = points.iter().min_by_key(|p| p.offered_per_sec) else {
        return (None, None);
    };
    let mut sorted: Vec<&RatePoint> = points.iter().collect();
    sorted.sort_by_key(|p| p.offered_per_sec);
    for p in sorted {
        let kept_up = p.achieved_per_sec >= 0.95 * p.offered_per_sec as f64;
        if !kept_up {
            return (
                Some(p.offered_per_sec),
                Some(format!(
                    "achieved {:.0}/s, under 95 % of the offered {}/s",
                    p.achieved_per_sec, p.offered_per_sec
                )),
            );
        }
        if p.p99_us as f64 > factor * base.p99_us.max(1) as f64 {
            return (
                Some(p.offered_per_sec),
                Some(format!(
                    "p99 {} is over {factor}× the p99 at {}/s ({})",
                    micros(p.p99_us),
                    base.offered_per_sec,
                    micros(base.p99_us)
                )),
            );
        }
    }
    (None, None)
}

impl OpenLoopReport {
    pub fn table(&self) -> String {
        let rows: Vec<Vec<String>> = self
            .rates
            .iter()
            .map(|p| {
                vec![
                    p.offered_per_sec.to_string(),
                    format!("{:.0}", p.achieved_per_sec),
                    micros(p.p50_us),
                    micros(p.p99_us),
                    micros(p.p999_us),
                    micros(p.max_us),
                    p.errors.to_string(),
                ]
            })
            .collect();
        let mut out = format!(
            "{}\n{} connections, {} s per rate, latency from the scheduled send time\n\n",
            self.machine.line(),
            self.connections,
            self.seconds_per_rate
        );
        out.push_str(&table(
            &[
                "offered/s",
                "achieved/s",
                "p50",
                "p99",
                "p99.9",
                "max",
                "errors",
            ],
            &rows,
        ));
        match (&self.knee_per_sec, &self.knee_reason) {
            (Some(k), Some(why)) => out.push_str(&format!("knee: {k}/s ({why})\n")),
            _ => out.push_str("knee: none in the rates tried\n"),
        }
        for sample in &self.error_samples {
            out.push_str(&format!("  error: {sample}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(offered: u64, achieved: f64, p99: u64) -> RatePoint {
        RatePoint {
            offered_per_sec: offered,
            achieved_per_sec: achieved,
            p99_us: p99,
            ..RatePoint::default()
        }
    }

    #[test]
    fn the_knee_is_the_first_rate_that_breaks_either_rule() {
        let flat = [point(1000, 1000.0, 200), point(2000, 2000.0, 300)];
        assert_eq!(knee(&flat, 10.0).0, None);
        let slow = [
            point(1000, 1000.0, 200),
            point(5000, 5000.0, 2500),
            point(10_000, 9000.0, 90_000),
        ];
        assert_eq!(knee(&slow, 10.0).0, Some(5000));
        let behind = [point(1000, 1000.0, 200), point(5000, 4000.0, 300)];
        let (k, why) = knee(&behind, 10.0);
        assert_eq!(k, Some(5000));
        assert!(why.expect("a reason").contains("95 %"));
    }
}
