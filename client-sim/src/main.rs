//! `banter-sim`: Banter's headless client simulator.
//!
//! One subcommand per module in `commands/`; `main` only parses and
//! dispatches.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "banter-sim",
    version,
    about = "Banter headless client simulator"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Play in the terminal: walk to NPCs, talk, pick responses, finish quests.
    Play(commands::play::Args),
    /// Load-test a server with honest bots playing quests, alone or in parties; fails on any
    /// refusal or error (and, in parties, unless every member was paid once).
    Load(commands::load::Args),
    /// Run the cheat catalogue against a server; fails if any cheat gets through.
    Attack(commands::attack::Args),
    /// Simulate hours of play against the bark director and report what
    /// X said, how often, and why a deck beats a die.
    Barks(commands::barks::Args),
    /// Measure the server against its own stack: echo versus validated step throughput,
    /// open-loop latency, and many sessions held open.
    Bench(commands::bench::Args),
    /// Abuse a server (slowloris, never-reading sessions, connect churn, malformed frames,
    /// expired-token replay) at once; fails if it stops answering or admits a bad token.
    Abuse(commands::abuse::Args),
    /// Serve bare tokio-tungstenite's echo: the baseline for `bench --baseline-url`.
    TungsteniteEcho(commands::tungstenite_echo::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Play(args) => commands::play::run(&args),
        Cmd::Load(args) => commands::load::run(&args),
        Cmd::Attack(args) => commands::attack::run(&args),
        Cmd::Barks(args) => commands::barks::run(&args).map(|()| true),
        Cmd::Bench(args) => commands::bench::run(&args),
        Cmd::Abuse(args) => commands::abuse::run(&args),
        Cmd::TungsteniteEcho(args) => commands::tungstenite_echo::run(&args),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            // The whole chain: what was being done, then why it failed.
            eprintln!("banter-sim: {e:#}");
            ExitCode::from(2)
        }
    }
}
