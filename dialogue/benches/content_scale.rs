//! Content at scale (issue 22): generated worlds of 1,000, 10,000 and 50,000 NPCs, five quests
//! each, with a string table, written to disk as `gen-content` writes them, then loaded and
//! checked as `check-content`, a server start and a reload do. Prints the time per NPC at each
//! size against the smallest: loading and checking must stay linear (flat per NPC within 1.5x),
//! and 10,000 NPCs must check in under 10 s.
//!
//! ```sh
//! cargo bench -p banter-dialogue --bench content_scale              # 1k, 10k, 50k
//! cargo bench -p banter-dialogue --bench content_scale -- 1000 5000  # other sizes
//! ```
//!
//! Each NPC gives two work quests (catch, find), a work quest after the first, a talk quest and
//! a story talk quest after that one; the first quest requires the previous NPC's last, so the
//! questline crosses NPCs. Sixteen islands in a hand-written `world.json`, `quests.json` is
//! `[]`. `locales/fr.po` translates every NPC's greeting: one line per NPC, because one PO file
//! per locale is held to the same 8 MiB as every content file, and a table of all 55 lines of
//! 50,000 NPCs would be over 300 MB (see BENCHMARKS.md, "Content at scale").
//!
//! Load and check run three times at each size and the median is reported, with the first run
//! beside it (its memory is fresh to the process: on this virtual machine the kernel zeroing
//! and the host backing new pages make a 50,000-NPC first run slower per NPC than it computes).
//! The bench runs on jemalloc, the allocator of the server and `check-content`: with glibc's
//! malloc, which hands freed memory back and faults it in again, the time of a 50,000-NPC run
//! on this virtual machine is mostly the kernel zeroing fresh pages.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use banter_dialogue::check;
use banter_dialogue::content::Content;
use banter_dialogue::generate;
use serde_json::json;

#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const ISLANDS: usize = 16;
const QUESTS_PER_NPC: usize = 5;

fn main() {
    let mut sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.replace(['_', ','], "").parse().ok())
        .collect();
    if sizes.is_empty() {
        sizes = vec![1_000, 10_000, 50_000];
    }
    sizes.sort_unstable();
    println!("content at scale: {QUESTS_PER_NPC} quests per NPC, {ISLANDS} islands, fr.po");
    println!(
        "{:>7} {:>8} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>7}",
        "NPCs",
        "lines",
        "files",
        "largest",
        "generate",
        "load",
        "check",
        "total",
        "per NPC",
        "load/NPC",
        "vs base"
    );
    let mut baseline: Option<f64> = None;
    let mut verdicts = Vec::new();
    for &npcs in &sizes {
        let row = measure(npcs);
        let per_npc = row.total.as_secs_f64() / npcs as f64;
        let base = *baseline.get_or_insert(per_npc);
        let ratio = per_npc / base;
        println!(
            "{:>7} {:>8} {:>9} {:>6}K {:>8.2}s {:>8.2}s {:>8.2}s {:>8.2}s {:>8.1}µs {:>7.1}µs {:>6.2}x",
            npcs,
            row.lines,
            row.files,
            row.largest.div_ceil(1024),
            row.generate.as_secs_f64(),
            row.load.as_secs_f64(),
            row.check.as_secs_f64(),
            row.total.as_secs_f64(),
            per_npc * 1e6,
            row.load.as_secs_f64() / npcs as f64 * 1e6,
            ratio
        );
        if row.errors > 0 {
            println!("  {} errors, first: {}", row.errors, row.first_error);
        }
        println!(
            "  fr.po: {} KiB, {}/{} lines translated; median of {} runs, the first {:.2}s",
            row.table_bytes / 1024,
            row.translated,
            row.lines,
            row.runs,
            row.cold.as_secs_f64()
        );
        verdicts.push((npcs, row.total, ratio, row.errors));
    }
    let flat = verdicts.iter().all(|&(_, _, ratio, _)| ratio <= 1.5);
    let clean = verdicts.iter().all(|&(_, _, _, errors)| errors == 0);
    println!(
        "per NPC within 1.5x of the smallest size at every size: {}",
        if flat { "yes" } else { "NO" }
    );
    if let Some(&(_, total, _, _)) = verdicts.iter().find(|v| v.0 == 10_000) {
        println!(
            "10,000 NPCs load and check in {:.2} s (target under 10 s): {}",
            total.as_secs_f64(),
            if total < Duration::from_secs(10) {
                "yes"
            } else {
                "NO"
            }
        );
    }
    println!(
        "every size checks clean: {}",
        if clean { "yes" } else { "NO" }
    );
}

struct Row {
    lines: usize,
    translated: usize,
    files: usize,
    /// The largest file the generator wrote.
    largest: u64,
    table_bytes: u64,
    generate: Duration,
    load: Duration,
    check: Duration,
    total: Duration,
    /// The first run's load and check: its memory is fresh to the process.
    cold: Duration,
    errors: usize,
    first_error: String,
    runs: usize,
}

fn measure(npcs: usize) -> Row {
    let root = std::env::temp_dir().join(format!(
        "banter-content-scale-{}-{npcs}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&root);
    let transcriptions: Vec<(String, Vec<u8>)> = (0..npcs).map(transcription).collect();
    let started = Instant::now();
    let generated = match generate::generate(&transcriptions) {
        Ok(generated) => generated,
        Err(errors) => panic!("the bench's transcriptions are refused: {}", errors[0]),
    };
    let generate_time = started.elapsed();
    drop(transcriptions);
    let mut largest = 0;
    for (relative, text) in &generated {
        largest = largest.max(text.len() as u64);
        write(&root, relative, text);
    }
    let files = generated.len();
    drop(generated);
    let islands: Vec<_> = (0..ISLANDS)
        .map(|k| json!({ "Id": island(k), "Name": format!("Isle {k}") }))
        .collect();
    write(
        &root,
        "world.json",
        &serde_json::to_string_pretty(&json!({ "Islands": islands, "Npcs": [] }))
            .unwrap_or_default(),
    );
    write(&root, "quests.json", "[]\n");
    let table = string_table(npcs);
    let table_bytes = table.len() as u64;
    write(&root, "locales/fr.po", &table);

    let runs = 3;
    let mut timings = Vec::new();
    let mut last = None;
    for _ in 0..runs {
        let started = Instant::now();
        let (content, mut diagnostics) = Content::load(&root);
        let loaded = started.elapsed();
        let (found, coverage) = check::check_with_coverage(&content);
        let total = started.elapsed();
        diagnostics.extend(found);
        timings.push((total, loaded, total - loaded));
        drop(content);
        last = Some((diagnostics, coverage));
    }
    let cold = timings[0].0;
    timings.sort();
    let (total, load, check) = timings[timings.len() / 2];
    let (diagnostics, coverage) = last.unwrap_or_default();
    let errors: Vec<_> = diagnostics.iter().filter(|d| d.is_error()).collect();
    let _ = std::fs::remove_dir_all(&root);
    Row {
        lines: coverage.first().map_or(0, |c| c.total),
        translated: coverage.first().map_or(0, |c| c.translated),
        files: files + 3,
        largest,
        table_bytes,
        generate: generate_time,
        load,
        check,
        total,
        cold,
        errors: errors.len(),
        first_error: errors.first().map(|d| d.to_string()).unwrap_or_default(),
        runs,
    }
}

fn write(root: &Path, relative: &str, text: &str) {
    let path: PathBuf = root.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("create {parent:?}: {e}"));
    }
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {path:?}: {e}"));
}

fn island(k: usize) -> String {
    format!("isle_{k:02}")
}

fn conversation(i: usize) -> String {
    format!("Npc{i:05}")
}

fn greeting(i: usize) -> String {
    format!("Hello there, I am villager {i}.")
}

/// One NPC's transcription (see `docs/CONTENT.md`, "Generating content").
fn transcription(i: usize) -> (String, Vec<u8>) {
    let isle = island(i % ISLANDS);
    let q = |k: usize| format!("N{i:05}Q{k}");
    let work = |k: usize, kind: &str, prerequisites: Vec<String>| {
        json!({
            "Id": q(k), "Kind": "side", "Shape": "work", "Prerequisites": prerequisites,
            "Objectives": [{ "Id": "Obj", "Kind": kind, "Target": 3, "Island": isle }],
            "Rewards": { "Coins": 10, "Experience": 5 },
            "Ask": format!("Anything for quest {k}?"),
            "Lines": {
                "Offer": format!("Would you do job {k} for me?"), "Accept": "Thank you kindly.",
                "Decline": "Another time then.", "Check": "How goes the work?",
                "Reminder": "Not done yet, keep at it.", "Completion": "Wonderful, here is your pay."
            }
        })
    };
    let talk = |k: usize, kind: &str, prerequisites: Vec<String>| {
        json!({
            "Id": q(k), "Kind": kind, "Shape": "talk", "Prerequisites": prerequisites,
            "Objectives": [{ "Id": "Listen", "Kind": "talk", "Target": 1 }],
            "Rewards": { "Coins": 5 },
            "Ask": format!("Tell me story {k}."),
            "Lines": {
                "Offer": format!("Want to hear tale {k}?"), "Accept": "Sit down then.",
                "Decline": "Suit yourself.", "Reminder": "Where was I?",
                "Intermediate": "And so the tide turned...", "Completion": "The end. Take this."
            }
        })
    };
    let previous = if i > 0 {
        vec![format!("N{:05}Q4", i - 1)]
    } else {
        Vec::new()
    };
    let quests = vec![
        work(0, "catch", previous),
        work(1, "find", Vec::new()),
        talk(2, "side", Vec::new()),
        work(3, "catch", vec![q(0)]),
        talk(4, "story", vec![q(2)]),
    ];
    debug_assert_eq!(quests.len(), QUESTS_PER_NPC);
    let t = json!({
        "Npc": {
            "Id": format!("npc{i:05}"), "Name": format!("Villager {i}"), "Island": isle,
            "Position": [i as f64, 0.0, (i % 97) as f64]
        },
        "Conversation": conversation(i),
        "Lines": {
            "Greeting": greeting(i), "Goodbye": "Farewell.",
            "AllDone": "Nothing more for you today."
        },
        "Quests": quests
    });
    (
        format!("npc{i:05}.json"),
        serde_json::to_vec(&t).unwrap_or_default(),
    )
}

/// `fr.po`: every NPC's greeting (`<Conversation>_Hello`), whose id the generator derives from
/// the conversation and the node.
fn string_table(npcs: usize) -> String {
    let mut po = String::from(
        "msgid \"\"\nmsgstr \"\"\n\"Language: fr\\n\"\n\"Content-Type: text/plain; charset=UTF-8\\n\"\n\n",
    );
    for i in 0..npcs {
        let c = conversation(i);
        let id = banter_dialogue::lines::derive_id(&[&c, &format!("{c}_Hello")]);
        po.push_str(&format!(
            "msgctxt \"{id}\"\nmsgid \"{}\"\nmsgstr \"Bonjour, je suis le villageois {i}.\"\n\n",
            greeting(i)
        ));
    }
    po
}
