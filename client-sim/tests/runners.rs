//! The bench and abuse runners against a real server on 127.0.0.1 port 0 (the e2e harness), in
//! miniature: one connection for well under a second per bench mode, and every abuser with a
//! handful of connections for two seconds. What is checked is the reports' shape and their
//! invariants: nothing honest refused, counts that add up, percentiles in order.

use std::collections::BTreeMap;
use std::time::Duration;

use banter_e2e::TestServer;
use banter_sim::abuse::{self, AbuseOptions, NoReadRequest};
use banter_sim::bench::{self, Baseline, OpenLoopOptions, ScaleOptions, Target, ThroughputOptions};
use banter_sim::http::Endpoint;

fn endpoint(server: &TestServer) -> Endpoint {
    Endpoint::parse(&format!("http://{}", server.addr)).expect("the test server's address")
}

/// A server that serves the echo and does not throttle (as `scripts/bench-ab.sh` runs it).
async fn bench_server() -> TestServer {
    TestServer::start_with(|config| {
        config.bench_echo = true;
        config.limits.rate_per_sec = 1_000_000.0;
        config.limits.burst = 1_000_000.0;
    })
    .await
}

fn target(server: &TestServer, run_id: &str) -> Target {
    Target {
        endpoint: endpoint(server),
        auth_secret: Some(server.config.auth_secret.clone()),
        source_ips: 1,
        read_buffer: 16 * 1024,
        run_id: run_id.to_owned(),
    }
}

fn total(tally: &BTreeMap<String, u64>) -> u64 {
    tally.values().sum()
}

/// Asserts `report` serializes to JSON with each of `keys` at its top level.
#[track_caller]
fn assert_json_fields(report: &impl serde::Serialize, keys: &[&str]) {
    let json = serde_json::to_value(report).expect("json");
    for key in keys {
        assert!(json.get(key).is_some(), "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_throughput_bench_measures_echo_and_step_without_errors() {
    let server = bench_server().await;
    let report = bench::throughput(ThroughputOptions {
        target: target(&server, "runners-throughput"),
        connections: 1,
        depth: 2,
        seconds: 0.3,
        rounds: 1,
        server_pid: None,
        baseline: None,
    })
    .await
    .expect("the bench runs");
    let text = report.table();
    assert_eq!(report.errors, 0, "{text}");
    assert!(report.error_samples.is_empty(), "{text}");
    assert_eq!(report.rounds.len(), 1, "{text}");
    let round = &report.rounds[0];
    for phase in [&round.echo, &round.step] {
        assert!(phase.messages > 0, "{text}");
        assert!(phase.msgs_per_sec > 0.0 && phase.seconds > 0.0, "{text}");
        assert!(phase.server_cpu_us_per_msg.is_none(), "no --server-pid");
    }
    // The median of one round is that round.
    assert_eq!(report.echo_msgs_per_sec, round.echo.msgs_per_sec);
    assert_eq!(report.step_msgs_per_sec, round.step.msgs_per_sec);
    assert_eq!(report.ratio, round.ratio);
    assert!(report.ratio > 0.0, "{text}");
    assert_eq!(report.message_bytes.len(), 3);
    assert_json_fields(
        &report,
        &[
            "machine",
            "echo_msgs_per_sec",
            "step_msgs_per_sec",
            "ratio",
            "rounds",
        ],
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tungstenite_baseline_is_driven_as_a_third_phase_and_compared_with_the_echo() {
    let server = bench_server().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let baseline_addr = listener.local_addr().expect("its address");
    tokio::spawn(bench::serve_tungstenite_echo(listener));
    // The test server and the baseline both run in this process: its CPU time stands for both,
    // which is enough to check the figures are taken and compared.
    let pid = Some(std::process::id());
    let target = target(&server, "runners-baseline");
    let baseline = Baseline {
        target: Target {
            endpoint: Endpoint::parse(&baseline_addr.to_string()).expect("an address"),
            ..target.clone()
        },
        pid,
    };
    let report = bench::throughput(ThroughputOptions {
        target,
        connections: 2,
        depth: 2,
        seconds: 0.3,
        rounds: 1,
        server_pid: pid,
        baseline: Some(baseline),
    })
    .await
    .expect("the bench runs");
    let text = report.table();
    assert_eq!(report.errors, 0, "{text}");
    let round = &report.rounds[0];
    let baseline = round.baseline.as_ref().expect("a baseline phase");
    assert!(
        baseline.messages > 0 && baseline.msgs_per_sec > 0.0,
        "{text}"
    );
    let (Some(echo_cpu), Some(baseline_cpu)) = (
        round.echo.server_cpu_us_per_msg,
        baseline.server_cpu_us_per_msg,
    ) else {
        panic!("CPU per message for both: {text}");
    };
    assert_eq!(
        report.echo_vs_tungstenite_cpu,
        Some((baseline_cpu / echo_cpu * 1000.0).round() / 1000.0),
        "{text}"
    );
    assert!(text.contains("tungstenite msg/s"), "{text}");
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_open_loop_bench_orders_its_percentiles() {
    let server = bench_server().await;
    let rates = vec![40, 80];
    let seconds = 0.4;
    let report = bench::open_loop(OpenLoopOptions {
        target: target(&server, "runners-open-loop"),
        connections: 1,
        rates: rates.clone(),
        seconds,
        knee_factor: 10.0,
    })
    .await
    .expect("the bench runs");
    let text = report.table();
    assert_eq!(report.rates.len(), rates.len(), "{text}");
    assert!(report.error_samples.is_empty(), "{text}");
    for (point, rate) in report.rates.iter().zip(rates) {
        assert_eq!(point.offered_per_sec, rate);
        assert_eq!(point.errors, 0, "{text}");
        // Every scheduled message is answered, and no more than the schedule holds.
        let scheduled = (rate as f64 * seconds).ceil() as u64;
        assert!(
            point.messages >= 1 && point.messages <= scheduled,
            "{} of {scheduled}: {text}",
            point.messages
        );
        assert!(point.p50_us > 0, "{text}");
        assert!(point.p50_us <= point.p99_us, "{text}");
        assert!(point.p99_us <= point.p999_us, "{text}");
        assert!(point.p999_us <= point.max_us, "{text}");
    }
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_scale_run_holds_every_session() {
    let server = bench_server().await;
    let report = bench::scale(
        ScaleOptions {
            target: target(&server, "runners-scale"),
            sessions: 3,
            interval: Duration::from_millis(100),
            hold: Duration::from_millis(400),
            parallel_connects: 2,
            server_pid: None,
        },
        false,
    )
    .await
    .expect("the scale run runs");
    let text = report.table();
    assert!(report.clean(), "{text}");
    assert_eq!(report.sessions_open, 3, "{text}");
    assert!(report.messages > 0, "{text}");
    assert!(report.latency_p50_us <= report.latency_p99_us, "{text}");
    assert!(
        report.server_rss_per_session_bytes.is_none(),
        "no --server-pid"
    );
    server.stop().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_abuse_run_is_held_and_its_counts_add_up() {
    // A short header deadline, so the slowloris connections are closed within the run.
    let server = TestServer::start_with(|config| {
        config.limits.handshake_timeout = Duration::from_millis(500);
    })
    .await;
    let options = AbuseOptions {
        endpoint: endpoint(&server),
        duration: Duration::from_secs(2),
        auth_secret: server.config.auth_secret.clone(),
        source_ips: 1,
        slowloris: 3,
        slowloris_interval: Duration::from_millis(200),
        noread: 2,
        noread_rate: 10.0,
        noread_request: NoReadRequest::Afk,
        noread_conversation: "Bram".to_owned(),
        noread_rcvbuf: 2048,
        churn_rate: 20.0,
        churn_pool: 5,
        churn_garbage: 0.25,
        churn_in_flight: 16,
        malformed: 2,
        malformed_rate: 10.0,
        malformed_rare_every: 5,
        replay_rate: 20.0,
        progress: false,
    };
    let report = abuse::run(options).await.expect("the abuse run runs");
    let text = report.table();
    assert!(report.ok, "{text}");
    assert!(report.findings.iter().all(|f| !f.fail), "{text}");

    let h = &report.health;
    assert!(
        h.probes >= 1 && h.failures == 0 && h.answering_after,
        "{text}"
    );

    // Slowloris: every connection connected, and each was closed by the server or still open.
    let s = &report.slowloris;
    assert_eq!(s.connected, 3, "{text}");
    assert_eq!(s.closed_by_server + s.open_at_end, s.connected, "{text}");
    assert_eq!(total(&s.server_answers), s.closed_by_server, "{text}");
    assert_eq!(s.closed_after_s.count as u64, s.closed_by_server, "{text}");
    assert!(s.closed_by_server > 0, "a 500 ms header deadline: {text}");

    // Never-reading: honest upgrades, never refused.
    let n = &report.noread;
    assert!(n.upgrade_failures.is_empty(), "{text}");
    assert!(n.sessions_opened >= 2 && n.requests_sent > 0, "{text}");
    assert_eq!(total(&n.close_errors), n.closed_by_server, "{text}");

    // Churn: every valid token upgraded, every garbage one refused, and the tallies are the
    // attempts.
    let c = &report.churn;
    assert!(c.attempted > 0, "{text}");
    assert_eq!(
        c.completed, c.attempted,
        "the stragglers are awaited: {text}"
    );
    assert_eq!(total(&c.valid) + total(&c.garbage), c.completed, "{text}");
    assert_eq!(c.valid.keys().collect::<Vec<_>>(), ["101"], "{text}");
    assert_eq!(c.garbage_admitted, 0, "{text}");
    assert!(c.garbage.keys().all(|k| k == "401"), "{text}");
    let garbage = (0..c.attempted)
        .filter(|&k| abuse::is_garbage(k, 0.25))
        .count() as u64;
    assert_eq!(total(&c.garbage), garbage, "{text}");
    assert_eq!(c.upgrade_ms.count as u64, total(&c.valid), "{text}");

    // Malformed: honest upgrades, frames counted by kind, every error a typed one.
    let m = &report.malformed;
    assert!(m.connect_failures.is_empty(), "{text}");
    assert_eq!(total(&m.frames_sent), m.frames_total, "{text}");
    assert!(m.frames_answerable <= m.frames_total, "{text}");
    assert!(total(&m.errors_received) > 0, "{text}");
    assert!(total(&m.errors_received) <= m.frames_answerable, "{text}");
    assert!(m.connects >= 2, "{text}");

    // Replay: the short-lived tokens worked while valid; nothing replayed got in.
    let r = &report.replay;
    assert_eq!(
        r.short_lived_accepted_while_valid, r.short_lived_tokens as u64,
        "{text}"
    );
    assert!(r.attempted > 0, "{text}");
    assert_eq!(r.admitted, 0, "{text}");
    let answers: u64 = r.answers.values().map(total).sum();
    assert_eq!(answers, r.attempted, "{text}");
    assert!(
        r.answers.values().all(|a| a.keys().all(|k| k == "401")),
        "{text}"
    );

    assert_json_fields(
        &report,
        &[
            "machine",
            "slowloris",
            "noread",
            "churn",
            "malformed",
            "replay",
            "health",
            "findings",
            "ok",
        ],
    );
    server.stop().await.expect("clean shutdown");
}
