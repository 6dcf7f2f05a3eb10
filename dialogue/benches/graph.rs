//! Loading, merging and building dialogue graphs: the sample content and synthetic
//! conversations from 10,000 to 1,000,000 nodes. Growth must be linear.

use std::hint::black_box;
use std::path::Path;

use banter_dialogue::content::Content;
use banter_dialogue::{DialogueGraph, canonical, layers, synth};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn sample_content(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../content");
    c.bench_function("content/load_sample", |b| {
        b.iter(|| black_box(Content::load(black_box(&root))))
    });
}

fn synthetic(c: &mut Criterion) {
    let mut group = c.benchmark_group("synthetic");
    group.sample_size(10);
    for nodes in [10_000usize, 100_000] {
        let json = synth::conversation_json(nodes);
        group.throughput(Throughput::Elements(nodes as u64));
        group.bench_with_input(BenchmarkId::new("parse", nodes), &json, |b, json| {
            b.iter(|| {
                let mut d = Vec::new();
                black_box(canonical::parse_conversation_with_limit(
                    "s",
                    json.as_bytes(),
                    u64::MAX,
                    &mut d,
                ))
            })
        });
        let mut d = Vec::new();
        let file = canonical::parse_conversation_with_limit("s", json.as_bytes(), u64::MAX, &mut d)
            .unwrap_or_default();
        group.bench_with_input(BenchmarkId::new("merge", nodes), &file, |b, file| {
            b.iter(|| {
                let mut d = Vec::new();
                black_box(layers::merge("s", file, &[], &mut d))
            })
        });
    }
    for nodes in [10_000usize, 100_000, 1_000_000] {
        let json = synth::conversation_json(nodes);
        let mut d = Vec::new();
        let file = canonical::parse_conversation_with_limit("s", json.as_bytes(), u64::MAX, &mut d)
            .unwrap_or_default();
        let merged = layers::merge("s", &file, &[], &mut d);
        drop(json);
        group.throughput(Throughput::Elements(nodes as u64));
        group.bench_with_input(BenchmarkId::new("build", nodes), &merged, |b, merged| {
            b.iter(|| {
                let mut d = Vec::new();
                black_box(DialogueGraph::build(merged, &mut d))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, sample_content, synthetic);
criterion_main!(benches);
