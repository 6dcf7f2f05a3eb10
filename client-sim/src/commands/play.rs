//! `banter-sim play`: argument parsing over [`banter_sim::play::run`].

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use banter_sim::auth::DEV_SERVICE_KEY;
use banter_sim::http::Endpoint;
use banter_sim::play::{Input, PlayOptions, run as run_play};
use clap::Args as ClapArgs;

/// Arguments of `banter-sim play`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Your name: the same name is the same player next time.
    #[arg(long)]
    pub player: String,
    /// The server: http://HOST:PORT (or ws://HOST:PORT, or HOST:PORT).
    #[arg(long, env = "BANTER_URL", default_value = super::DEFAULT_URL)]
    pub url: String,
    /// The content folder the server serves [default: the workspace's content/].
    #[arg(long)]
    pub content: Option<PathBuf>,
    /// Milliseconds per letter as lines type out (0: at once).
    #[arg(long, default_value_t = 30)]
    pub letter_ms: u64,
    /// The NPC (instance id) to start next to.
    #[arg(long)]
    pub spawn: Option<String>,
    /// The service key, to report catches and finds as the game would (`e`).
    #[arg(long, env = "BANTER_SERVICE_KEY", default_value = DEV_SERVICE_KEY, hide_default_value = true)]
    pub service_key: String,
    /// The language to read in (BCP 47: `ja`, `ar`, `en-XA` for the pseudo-locale).
    #[arg(long)]
    pub locale: Option<String>,
}

/// Plays until the player quits.
pub fn run(args: &Args) -> Result<bool> {
    let options = PlayOptions {
        endpoint: Endpoint::parse(&args.url)?.with_locale(args.locale.clone()),
        player: args.player.clone(),
        content: super::content(args.content.as_ref())?,
        service_key: args.service_key.clone(),
        letter_interval: Duration::from_millis(args.letter_ms),
        spawn: args.spawn.clone(),
    };
    let input = Input::spawn(std::io::BufReader::new(std::io::stdin()));
    let mut out = std::io::stdout();
    super::runtime()?.block_on(run_play(options, input, &mut out))?;
    Ok(true)
}
