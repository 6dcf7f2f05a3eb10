//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/`) through the very code the
//! fuzz targets run (`fuzz/harness.rs`, included below), so stable CI guards every input that
//! once found a bug, and the seeds, without nightly or libFuzzer.

#[path = "../../fuzz/harness.rs"]
mod harness;

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(files.len() >= 3, "{target}: a handful of seeds at least");
    for file in files {
        let bytes = std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let outcome = std::panic::catch_unwind(|| run(&bytes));
        assert!(outcome.is_ok(), "{target}: {} panics", file.display());
    }
}

/// One test per fuzz target, `<target>_corpus`: replays that target's corpus.
macro_rules! corpus_tests {
    ($($test:ident: $target:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                replay(stringify!($target), harness::$target);
            }
        )*
    };
}

corpus_tests! {
    content_loader_corpus: content_loader,
    payload_parser_corpus: payload_parser,
    condition_corpus: condition,
    frame_decoder_corpus: frame_decoder,
    line_tagger_corpus: line_tagger,
    string_table_corpus: string_table,
}
