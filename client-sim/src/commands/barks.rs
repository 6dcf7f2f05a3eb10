//! `banter-sim barks`: argument parsing and formatting over
//! [`banter_sim::barks::simulate`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};

use banter_barks::stats::SessionReport;
use banter_barks::{BarkCatalog, Filter};
use banter_dialogue::locale::Locale;
use banter_sim::barks::{
    LoadCatalog, SimConfig, SimReport, load_locales, localize_catalog, simulate,
};
use clap::Args as ClapArgs;

/// Arguments of `banter-sim barks`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// Simulated hours of play.
    #[arg(long, default_value_t = 10.0)]
    pub hours: f64,
    /// Seed: the same seed gives the same session and the same figures.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bark catalog [default: content/barks/catalog.json in the workspace].
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// Trials per pool size for the die and deck figures.
    #[arg(long, default_value_t = 1_000_000)]
    pub trials: u32,
    /// Print one JSON object instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Hear the lines in this locale (a BCP 47 tag: `ja`, `pt-BR`, `en-XA` for the
    /// pseudo-locale), from the content's string tables with the server's fallback chain.
    #[arg(long)]
    pub locale: Option<String>,
    /// The content folder whose `locales/` translate the lines [default: the folder holding
    /// the catalog's `barks/`].
    #[arg(long)]
    pub content: Option<PathBuf>,
}

const CATALOG: &str = "content/barks/catalog.json";

/// The default catalog: `content/barks/catalog.json` in the current
/// directory or the nearest ancestor that has one, else the one next to
/// this crate in the source tree.
fn default_catalog() -> PathBuf {
    if let Ok(cwd) = std::env::current_dir() {
        for dir in cwd.ancestors() {
            let p = dir.join(CATALOG);
            if p.is_file() {
                return p;
            }
        }
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(CATALOG)
}

/// Run the subcommand.
pub fn run(args: &Args) -> Result<()> {
    ensure!(
        args.hours.is_finite() && args.hours > 0.0 && args.hours <= 10_000.0,
        "--hours must be in (0, 10000], got {}",
        args.hours
    );
    let path = args.catalog.clone().unwrap_or_else(default_catalog);
    let loaded = BarkCatalog::load(&path)?;
    for w in &loaded.warnings {
        eprintln!("warning: {}: {w}", path.display());
    }
    let (catalog, locale) = match &args.locale {
        None => (loaded.catalog, None),
        Some(tag) => {
            let locale = Locale::parse(tag)?;
            // `content/barks/catalog.json` belongs to `content/`.
            let content = args.content.clone().unwrap_or_else(|| {
                path.parent()
                    .and_then(Path::parent)
                    .map_or_else(|| PathBuf::from("content"), Path::to_path_buf)
            });
            let locales =
                load_locales(&content).with_context(|| format!("in {}", content.display()))?;
            let (catalog, translated) = localize_catalog(loaded.catalog, &locales, &locale);
            if translated == 0 && !locale.chain().any(|t| t == locales.settings.source) {
                eprintln!(
                    "warning: no string table in {} translates a bark into `{locale}`; the lines \
                     keep their source text",
                    content.display()
                );
            }
            (catalog, Some(locale.to_string()))
        }
    };
    let cfg = SimConfig {
        hours: args.hours,
        seed: args.seed,
        trials: args.trials.max(1),
    };
    let mut report = simulate(catalog, &cfg);
    report.locale = locale;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&report));
    }
    Ok(())
}

fn opt(p: Option<f64>) -> String {
    p.map_or_else(|| "-".to_owned(), |p| format!("{p:.3}"))
}

fn rejections(s: &SessionReport, i: usize) -> String {
    Filter::ALL
        .iter()
        .map(|f| s.cues[i].rejected.get(f).copied().unwrap_or(0).to_string())
        .collect::<Vec<_>>()
        .join("/")
}

/// The readable form.
pub fn table(r: &SimReport) -> String {
    let s = &r.session;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "banter-sim barks: {} simulated hours, seed {}, {} lines in the catalog\n",
        r.hours, r.seed, r.catalog_lines
    );
    let _ = writeln!(
        o,
        "first lines heard ({}):",
        r.locale.as_deref().unwrap_or("the catalog's text")
    );
    for h in &r.first_heard {
        let _ = writeln!(o, "{:>8.1} s  {:<24} {}", h.at_seconds, h.line, h.text);
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "{:<15} {:<8} {:>4} {:>6} {:>6} {:>6} {:>8} {:>6}  rejected by filter 1/2/3/4/5/6",
        "cue", "kind", "pool", "fires", "roll", "played", "measured", "table"
    );
    for (i, c) in s.cues.iter().enumerate() {
        let _ = writeln!(
            o,
            "{:<15} {:<8} {:>4} {:>6} {:>6} {:>6} {:>8} {:>6.2}  {}",
            c.cue.name(),
            format!("{:?}", c.kind).to_lowercase(),
            c.pool,
            c.fires,
            c.reached_roll,
            c.played,
            opt(c.measured_probability),
            c.table_probability,
            rejections(s, i)
        );
    }
    let _ = writeln!(
        o,
        "\nlines played {}, distinct lines heard {} of {}, cut off by a higher priority {}",
        s.lines_played, s.distinct_lines_heard, r.catalog_lines, s.cuts
    );
    let _ = writeln!(
        o,
        "never heard ({}): {}",
        s.never_heard.len(),
        if s.never_heard.is_empty() {
            "-".to_owned()
        } else {
            s.never_heard.join(", ")
        }
    );
    match &s.shortest_repeat_gap {
        Some(g) => {
            let _ = writeln!(
                o,
                "shortest gap between repeats of a line: {:.0} s ({})",
                g.seconds, g.line
            );
        }
        None => {
            let _ = writeln!(o, "no line was heard twice");
        }
    }
    let _ = writeln!(
        o,
        "standing still: {:.1} min, {} lines, {:.3} lines per idle minute (ceiling {:.2})",
        s.idle_minutes, s.idle_lines, s.idle_lines_per_minute, s.idle_ceiling_per_minute
    );
    let _ = writeln!(
        o,
        "\nrepeats, a die against the deck ({} trials per pool; deck measured from a new deck)",
        r.trials
    );
    let _ = writeln!(
        o,
        "{:>4}  {:>12} {:>12} {:>12}  {:>12} {:>12} {:>12}  {:>10}",
        "n",
        "die 1+Q(n)",
        "die measured",
        "deck",
        "die 1-Pn(4)",
        "die measured",
        "deck",
        "deck first"
    );
    for p in &r.pools {
        let _ = writeln!(
            o,
            "{:>4}  {:>12.4} {:>12.4} {:>12.4}  {:>12.4} {:>12.4} {:>12.4}  {:>10}",
            p.n,
            p.die_exact.expected_first_repeat,
            p.die_measured.expected_first_repeat,
            p.deck_measured.expected_first_repeat,
            p.die_exact.repeat_within_four,
            p.die_measured.repeat_within_four,
            p.deck_measured.repeat_within_four,
            p.deck_measured.earliest_first_repeat,
        );
    }
    let _ = writeln!(
        o,
        "(deck first: earliest first repeat over all trials; n + 1 means never before all n were heard)"
    );
    o
}
