//! `banter-sim bench`: the server measured against the limit of its own stack.
//!
//! - [`throughput`]: the same connections, message sizes and pipeline depth drive the echo
//!   endpoint (`GET /bench/echo`, the transport alone) and the validated dialogue step (the
//!   sample content's gossip loop, [`script`]: `choose`, `advance`, `action OpenShop`, no store
//!   write), in alternating phases; the ratio of the two throughputs is what must hold.
//! - [`open_loop`]: the dialogue step at fixed offered rates, each message sent on a schedule
//!   and its round trip measured from its *scheduled* time (no coordinated omission), so a
//!   server that falls behind shows it in the percentiles.
//! - [`scale`]: many authenticated sessions held open, each sending a cheap message every few
//!   seconds, and the server's resident memory per session.
//!
//! - [`baseline`]: bare tokio-tungstenite's echo (`banter-sim tungstenite-echo`), which the
//!   throughput mode drives as a third phase when given one, so the echo is measured against
//!   the library itself in the same run.
//!
//! Every mode reaches the server through a [`Target`] and reports the [`Machine`] it ran on.
//! The client is written to be cheap (answers are recognised by their first bytes, never
//! decoded), since on a shared machine every microsecond it spends is one the server does not
//! get; the server's own CPU time per message (from `/proc/<pid>/stat`, with `--server-pid`)
//! is the figure that does not depend on the client.

pub mod baseline;
pub mod machine;
pub mod open_loop;
pub mod scale;
pub mod script;
pub mod target;
pub mod throughput;

pub use baseline::serve_tungstenite_echo;
pub use machine::{Machine, cpu_time, rss_kib};
pub use open_loop::{OpenLoopOptions, OpenLoopReport, RatePoint, knee, open_loop};
pub use scale::{ScaleOptions, ScaleReport, scale};
pub use script::{Answer, Phase, classify, echo_message, step_message};
pub use target::{ANSWER_TIMEOUT, Target, Ws, echo_connection, source_ip, step_session};
pub use throughput::{
    Baseline, PhaseFigures, Round, ThroughputOptions, ThroughputReport, throughput,
};

/// `x` rounded to `places` decimals.
fn round_to(x: f64, places: i32) -> f64 {
    let p = 10f64.powi(places);
    (x * p).round() / p
}
