//! Throughput: echo (the transport alone) against the validated dialogue step, with the same
//! connections, message sizes and pipeline depth, in alternating phases; the ratio of the two is
//! what must hold. Each connection keeps `depth` requests in flight and refills as answers come.
//! With a [`Baseline`], a third phase drives bare tokio-tungstenite's echo
//! ([`super::baseline`]) with the same echo messages, so the echo's own cost is measured against
//! the library's in the same run.

use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt, SinkExt, StreamExt};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::machine::{Machine, cpu_time};
use super::round_to;
use super::script::{Answer, Lane, Phase, classify, step_message};
use super::target::{ANSWER_TIMEOUT, Target, Ws, echo_connection, open_all, step_session};
use crate::error::{Result, SimError};
use crate::report::table;

/// What one connection did in one phase.
#[derive(Debug, Default)]
struct Driven {
    answers: u64,
    errors: u64,
    sample: Option<String>,
}

/// Keeps `depth` requests in flight on `ws` until `deadline`, then waits for the rest.
async fn drive(
    ws: &mut Ws,
    lane: &mut Lane,
    phase: Phase,
    depth: usize,
    deadline: Instant,
) -> Driven {
    let mut out = Driven::default();
    let mut in_flight = 0usize;
    let result: Result<()> = async {
        for _ in 0..depth {
            ws.feed(lane.next(phase)).await?;
            in_flight += 1;
        }
        ws.flush().await?;
        while in_flight > 0 {
            // Everything already received is handled before the next write, so one flush
            // carries as many requests as there were answers.
            let mut answered = 0usize;
            let first = tokio::time::timeout(ANSWER_TIMEOUT, ws.next())
                .await
                .map_err(|_| SimError::Timeout(ANSWER_TIMEOUT))?;
            let mut frame = Some(first);
            while let Some(next) = frame.take() {
                match next {
                    Some(Ok(Message::Text(text))) => {
                        let answer = match phase {
                            Phase::Echo => Answer::Ack,
                            Phase::Step => classify(text.as_str()),
                        };
                        match answer {
                            Answer::Ack => answered += 1,
                            Answer::Error => {
                                answered += 1;
                                out.errors += 1;
                                out.sample.get_or_insert_with(|| text.as_str().to_owned());
                            }
                            Answer::Other => {}
                        }
                    }
                    Some(Ok(Message::Close(_))) | None => return Err(SimError::Closed),
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e.into()),
                }
                frame = ws.next().now_or_never();
            }
            in_flight -= answered;
            out.answers += answered as u64;
            if Instant::now() < deadline {
                for _ in 0..answered {
                    ws.feed(lane.next(phase)).await?;
                    in_flight += 1;
                }
                ws.flush().await?;
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        out.errors += in_flight as u64;
        out.sample.get_or_insert_with(|| e.to_string());
    }
    out
}

/// How the throughput comparison runs.
#[derive(Clone, Debug)]
pub struct ThroughputOptions {
    pub target: Target,
    pub connections: usize,
    pub depth: usize,
    pub seconds: f64,
    pub rounds: usize,
    pub server_pid: Option<u32>,
    pub baseline: Option<Baseline>,
}

/// A bare tokio-tungstenite echo server (`banter-sim tungstenite-echo`) to drive after the
/// echo and the step in every round.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// Where it listens: the target's settings (source addresses, read buffer) with this
    /// endpoint.
    pub target: Target,
    /// Its process id, for its CPU time per message.
    pub pid: Option<u32>,
}

/// Which connection a phase drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Leg {
    Echo,
    Step,
    Baseline,
}

impl Leg {
    /// The messages it sends: the baseline gets the echo's.
    fn phase(self) -> Phase {
        match self {
            Leg::Echo | Leg::Baseline => Phase::Echo,
            Leg::Step => Phase::Step,
        }
    }
}

/// One phase's figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PhaseFigures {
    pub msgs_per_sec: f64,
    pub messages: u64,
    pub seconds: f64,
    /// The server's CPU time per message (user + system, all threads), with `--server-pid`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_us_per_msg: Option<f64>,
    /// The server's CPU use during the phase, in cores.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cores: Option<f64>,
    /// The server's CPU time during the phase, in seconds (user + system, all threads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_seconds: Option<f64>,
}

/// One echo phase and one step phase (and one baseline phase, with a [`Baseline`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Round {
    pub echo: PhaseFigures,
    pub step: PhaseFigures,
    pub ratio: f64,
    /// Bare tokio-tungstenite's echo, with the echo's messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<PhaseFigures>,
}

/// `banter-sim bench`'s throughput result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ThroughputReport {
    pub machine: Machine,
    pub connections: usize,
    pub depth: usize,
    pub seconds_per_phase: f64,
    /// Byte lengths of the three step messages (the echo messages match them).
    pub message_bytes: Vec<usize>,
    /// Medians over the rounds.
    pub echo_msgs_per_sec: f64,
    pub step_msgs_per_sec: f64,
    pub ratio: f64,
    /// Median over the rounds of echo CPU per message / step CPU per message (with
    /// `--server-pid`): the ratio the server alone would reach if the client cost nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_ratio: Option<f64>,
    /// The same ratio from all rounds pooled: (all the echo phases' CPU ÷ their messages) ÷
    /// (all the step phases' CPU ÷ theirs). With many short rounds the two kinds of phase
    /// alternate every few seconds and share the machine's swings, so on a noisy machine this is
    /// the figure to read (`--seconds 1 --rounds 20`: BENCHMARKS.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_cpu_ratio_pooled: Option<f64>,
    /// Median over the rounds of bare tokio-tungstenite's CPU per echoed message / the echo's
    /// (with a baseline and both pids): 1.0 when `/bench/echo` costs what the library alone
    /// does, under 1 by the share the server adds to it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo_vs_tungstenite_cpu: Option<f64>,
    /// [`ThroughputReport::echo_vs_tungstenite_cpu`] from all rounds pooled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo_vs_tungstenite_cpu_pooled: Option<f64>,
    pub rounds: Vec<Round>,
    pub errors: u64,
    pub error_samples: Vec<String>,
}

/// The median of a few per-round figures (three rounds by default), exact: the mean of the two
/// middle ones for an even count. Kept by hand on purpose: these are a handful of floats, not a
/// distribution, and an HDR histogram would round the headline figures it reports.
fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// A command to a connection task.
struct Run {
    leg: Leg,
    depth: usize,
    deadline: Instant,
    done: oneshot::Sender<Driven>,
}

/// Echo and step, alternating, `rounds` times.
pub async fn throughput(options: ThroughputOptions) -> Result<ThroughputReport> {
    let target = Arc::new(options.target.clone());
    let baseline_target = Arc::new(options.baseline.as_ref().map(|b| b.target.clone()));
    let connections = open_all(options.connections, 32, |i| {
        let target = target.clone();
        let baseline_target = baseline_target.clone();
        async move {
            let step = step_session(&target, i).await?;
            let echo = echo_connection(&target, i).await?;
            // The bare echo ignores the path and the token.
            let baseline = match baseline_target.as_ref() {
                Some(b) => Some(b.open("/bench/echo", "-", i).await?),
                None => None,
            };
            Ok((step, echo, baseline))
        }
    })
    .await?;
    let mut lanes = Vec::with_capacity(connections.len());
    for (mut step, mut echo, mut baseline) in connections {
        let (tx, mut rx) = mpsc::channel::<Run>(1);
        lanes.push(tx);
        tokio::spawn(async move {
            // Request ids 1..=3 went to the setup.
            let mut step_lane = Lane { lap: 0, next_id: 4 };
            let mut echo_lane = Lane { lap: 0, next_id: 4 };
            let mut baseline_lane = Lane { lap: 0, next_id: 4 };
            while let Some(run) = rx.recv().await {
                let (ws, lane) = match (run.leg, baseline.as_mut()) {
                    (Leg::Echo, _) => (&mut echo, &mut echo_lane),
                    (Leg::Step, _) => (&mut step, &mut step_lane),
                    (Leg::Baseline, Some(ws)) => (ws, &mut baseline_lane),
                    // Never sent: the baseline leg runs only when every lane has its connection.
                    (Leg::Baseline, None) => continue,
                };
                let driven = drive(ws, lane, run.leg.phase(), run.depth, run.deadline).await;
                let _ = run.done.send(driven);
            }
            let _ = step.close(None).await;
            let _ = echo.close(None).await;
            if let Some(mut ws) = baseline {
                let _ = ws.close(None).await;
            }
        });
    }
    let legs: &[Leg] = if options.baseline.is_some() {
        &[Leg::Echo, Leg::Step, Leg::Baseline]
    } else {
        &[Leg::Echo, Leg::Step]
    };

    let mut report = ThroughputReport {
        machine: Machine::probe_with_server(options.server_pid),
        connections: options.connections,
        depth: options.depth,
        seconds_per_phase: options.seconds,
        message_bytes: (0..3).map(|k| step_message(k, 1000).len()).collect(),
        ..ThroughputReport::default()
    };
    let phase_length = Duration::from_secs_f64(options.seconds);
    for _ in 0..options.rounds {
        let mut round = Round::default();
        for &leg in legs {
            let pid = match leg {
                Leg::Baseline => options.baseline.as_ref().and_then(|b| b.pid),
                Leg::Echo | Leg::Step => options.server_pid,
            };
            let cpu_before = pid.and_then(cpu_time);
            let started = Instant::now();
            let deadline = started + phase_length;
            let mut waits = Vec::with_capacity(lanes.len());
            for lane in &lanes {
                let (done, wait) = oneshot::channel();
                let run = Run {
                    leg,
                    depth: options.depth,
                    deadline,
                    done,
                };
                if lane.send(run).await.is_ok() {
                    waits.push(wait);
                }
            }
            let mut messages = 0;
            for wait in waits {
                let driven = wait.await.unwrap_or_default();
                messages += driven.answers;
                report.errors += driven.errors;
                if let Some(sample) = driven.sample
                    && report.error_samples.len() < 10
                {
                    report.error_samples.push(sample);
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            let cpu = match (cpu_before, pid.and_then(cpu_time)) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a).as_secs_f64()),
                _ => None,
            };
            let figures = PhaseFigures {
                msgs_per_sec: round_to(messages as f64 / elapsed, 0),
                messages,
                seconds: round_to(elapsed, 2),
                server_cpu_us_per_msg: cpu
                    .filter(|_| messages > 0)
                    .map(|c| round_to(c * 1e6 / messages as f64, 2)),
                server_cores: cpu.map(|c| round_to(c / elapsed, 2)),
                server_cpu_seconds: cpu.map(|c| round_to(c, 4)),
            };
            match leg {
                Leg::Echo => round.echo = figures,
                Leg::Step => round.step = figures,
                Leg::Baseline => round.baseline = Some(figures),
            }
        }
        round.ratio = if round.echo.msgs_per_sec > 0.0 {
            round_to(round.step.msgs_per_sec / round.echo.msgs_per_sec, 3)
        } else {
            0.0
        };
        report.rounds.push(round);
    }
    drop(lanes);
    let mut echo: Vec<f64> = report.rounds.iter().map(|r| r.echo.msgs_per_sec).collect();
    let mut step: Vec<f64> = report.rounds.iter().map(|r| r.step.msgs_per_sec).collect();
    let mut ratio: Vec<f64> = report.rounds.iter().map(|r| r.ratio).collect();
    report.echo_msgs_per_sec = median(&mut echo);
    report.step_msgs_per_sec = median(&mut step);
    report.ratio = median(&mut ratio);
    report.server_cpu_ratio = median_cpu_ratio(&report.rounds, |r| {
        Some((r.echo.server_cpu_us_per_msg?, r.step.server_cpu_us_per_msg?))
    });
    report.echo_vs_tungstenite_cpu = median_cpu_ratio(&report.rounds, |r| {
        Some((
            r.baseline.as_ref()?.server_cpu_us_per_msg?,
            r.echo.server_cpu_us_per_msg?,
        ))
    });
    report.server_cpu_ratio_pooled = pooled_cpu_ratio(&report.rounds, |r| Some((&r.echo, &r.step)));
    report.echo_vs_tungstenite_cpu_pooled =
        pooled_cpu_ratio(&report.rounds, |r| Some((r.baseline.as_ref()?, &r.echo)));
    Ok(report)
}

/// CPU per message of phase `a` ÷ that of phase `b`, each summed over every round where `pick`
/// finds both with their CPU time.
fn pooled_cpu_ratio(
    rounds: &[Round],
    pick: impl Fn(&Round) -> Option<(&PhaseFigures, &PhaseFigures)>,
) -> Option<f64> {
    let timed = |p: &PhaseFigures| Some((p.server_cpu_seconds?, p.messages));
    let (mut a_cpu, mut a_msgs, mut b_cpu, mut b_msgs) = (0.0, 0u64, 0.0, 0u64);
    for ((a_seconds, a_n), (b_seconds, b_n)) in rounds.iter().filter_map(|r| {
        let (a, b) = pick(r)?;
        Some((timed(a)?, timed(b)?))
    }) {
        a_cpu += a_seconds;
        a_msgs += a_n;
        b_cpu += b_seconds;
        b_msgs += b_n;
    }
    let ratio = (a_cpu / a_msgs as f64) / (b_cpu / b_msgs as f64);
    (a_msgs > 0 && b_msgs > 0 && ratio.is_finite()).then(|| round_to(ratio, 3))
}

/// The median over the rounds of `a / b` for the CPU figures `pick` finds, if any round has
/// both.
fn median_cpu_ratio(rounds: &[Round], pick: impl Fn(&Round) -> Option<(f64, f64)>) -> Option<f64> {
    let mut ratios: Vec<f64> = rounds
        .iter()
        .filter_map(|r| pick(r).map(|(a, b)| a / b).filter(|x| x.is_finite()))
        .collect();
    (!ratios.is_empty()).then(|| round_to(median(&mut ratios), 3))
}

impl ThroughputReport {
    pub fn table(&self) -> String {
        let with_baseline = self.rounds.iter().any(|r| r.baseline.is_some());
        let cpu = |p: &PhaseFigures| {
            p.server_cpu_us_per_msg
                .map_or("-".to_owned(), |c| format!("{c:.2} µs"))
        };
        let mut rows = Vec::new();
        for (i, r) in self.rounds.iter().enumerate() {
            let cores =
                |p: &PhaseFigures| p.server_cores.map_or("-".to_owned(), |c| format!("{c:.2}"));
            let mut row = vec![
                format!("{}", i + 1),
                format!("{:.0}", r.echo.msgs_per_sec),
                format!("{:.0}", r.step.msgs_per_sec),
                format!("{:.3}", r.ratio),
                cpu(&r.echo),
                cpu(&r.step),
                format!("{} / {}", cores(&r.echo), cores(&r.step)),
            ];
            if with_baseline {
                let baseline = r.baseline.as_ref();
                row.push(baseline.map_or("-".to_owned(), |b| format!("{:.0}", b.msgs_per_sec)));
                row.push(baseline.map_or("-".to_owned(), cpu));
            }
            rows.push(row);
        }
        let mut median_row = vec![
            "median".into(),
            format!("{:.0}", self.echo_msgs_per_sec),
            format!("{:.0}", self.step_msgs_per_sec),
            format!("{:.3}", self.ratio),
            String::new(),
            self.server_cpu_ratio
                .map_or(String::new(), |r| format!("cpu ratio {r:.3}")),
            self.server_cpu_ratio_pooled
                .map_or(String::new(), |r| format!("pooled {r:.3}")),
        ];
        if with_baseline {
            median_row.push(String::new());
            median_row.push(
                self.echo_vs_tungstenite_cpu
                    .map_or(String::new(), |r| format!("echo at {r:.3}x its rate")),
            );
        }
        rows.push(median_row);
        let mut out = format!(
            "{}\n{} connections, depth {}, {} s per phase, messages of {:?} bytes\n\n",
            self.machine.line(),
            self.connections,
            self.depth,
            self.seconds_per_phase,
            self.message_bytes
        );
        let mut header = vec![
            "round",
            "echo msg/s",
            "step msg/s",
            "ratio",
            "server cpu/echo",
            "server cpu/step",
            "server cores e/s",
        ];
        if with_baseline {
            header.extend(["tungstenite msg/s", "tungstenite cpu/msg"]);
        }
        out.push_str(&table(&header, &rows));
        out.push_str(&format!("errors: {}\n", self.errors));
        for sample in &self.error_samples {
            out.push_str(&format!("  {sample}\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(messages: u64, cpu_seconds: f64) -> PhaseFigures {
        PhaseFigures {
            messages,
            server_cpu_seconds: Some(cpu_seconds),
            ..PhaseFigures::default()
        }
    }

    #[test]
    fn the_pooled_ratio_sums_every_round_before_dividing() {
        let rounds = [
            Round {
                echo: phase(100, 1.0),
                step: phase(100, 2.0),
                ..Round::default()
            },
            Round {
                echo: phase(300, 1.0),
                step: phase(100, 1.0),
                ..Round::default()
            },
        ];
        // Echo: 2 s for 400 messages; step: 3 s for 200. The rounds' own ratios (0.5, 0.33)
        // would say otherwise.
        let pooled = pooled_cpu_ratio(&rounds, |r| Some((&r.echo, &r.step)));
        assert_eq!(pooled, Some(0.333));
        let none = pooled_cpu_ratio(&rounds, |r| Some((r.baseline.as_ref()?, &r.echo)));
        assert_eq!(none, None, "no baseline phase: no ratio");
        let without_cpu = [Round::default()];
        assert_eq!(
            pooled_cpu_ratio(&without_cpu, |r| Some((&r.echo, &r.step))),
            None
        );
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&mut []), 0.0);
    }
}
