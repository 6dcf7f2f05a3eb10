//! Narrative-analytics rollups: adding a row adds its count, keys stay apart, reads go by
//! conversation or quest, and two instances adding at once lose nothing.

use std::sync::Arc;

use banter_server::store::{RollupRow, Store};

use crate::store_support::{OpenStore, TestDb};

fn row(
    scope: &str,
    name: &str,
    metric: &str,
    subject: &str,
    detail: &str,
    count: i64,
) -> RollupRow {
    RollupRow {
        scope: scope.to_owned(),
        name: name.to_owned(),
        version: "v1".to_owned(),
        locale: "en".to_owned(),
        metric: metric.to_owned(),
        subject: subject.to_owned(),
        detail: detail.to_owned(),
        count,
    }
}

fn sorted(mut rows: Vec<RollupRow>) -> Vec<RollupRow> {
    rows.sort_by(|a, b| {
        (&a.metric, &a.subject, &a.detail, &a.version, &a.locale)
            .cmp(&(&b.metric, &b.subject, &b.detail, &b.version, &b.locale))
    });
    rows
}

async fn rollups_add_counts_and_keep_keys_apart(db: &TestDb) {
    let store = db.open().await;
    store
        .add_rollups(&[
            row("conversation", "Pim", "visit", "Hello", "", 3),
            row("conversation", "Pim", "choice", "Offer", "Offer_yes", 2),
            row("conversation", "Bram", "visit", "Hello", "", 7),
            row("quest", "pim_fish", "stage", "offered", "", 1),
        ])
        .await
        .expect("added");
    let mut other_version = row("conversation", "Pim", "visit", "Hello", "", 5);
    other_version.version = "v2".to_owned();
    store
        .add_rollups(&[
            row("conversation", "Pim", "visit", "Hello", "", 4),
            other_version.clone(),
        ])
        .await
        .expect("added again");
    assert_eq!(
        sorted(store.rollups("conversation", "Pim").await.expect("read")),
        vec![
            row("conversation", "Pim", "choice", "Offer", "Offer_yes", 2),
            row("conversation", "Pim", "visit", "Hello", "", 7),
            other_version,
        ]
    );
    assert_eq!(
        store.rollups("quest", "pim_fish").await.expect("read"),
        vec![row("quest", "pim_fish", "stage", "offered", "", 1)]
    );
    assert_eq!(store.rollups("quest", "Pim").await.expect("read"), vec![]);
    // The index holds only opens and endings.
    store
        .add_rollups(&[
            row("conversation", "Pim", "open", "Hello", "", 9),
            row("conversation", "Pim", "end", "closed", "Offer", 2),
        ])
        .await
        .expect("added");
    let index = sorted(store.rollup_index().await.expect("index"));
    assert_eq!(
        index,
        vec![
            row("conversation", "Pim", "end", "closed", "Offer", 2),
            row("conversation", "Pim", "open", "Hello", "", 9),
        ]
    );
    assert_eq!(store.add_rollups(&[]).await, Ok(()));
}

/// Two instances flushing the same keys at once: every count lands.
async fn rollups_from_two_instances_at_once_lose_nothing(db: &TestDb) {
    let first: Arc<dyn Store> = db.open().await;
    let second: Arc<dyn Store> = db.open().await;
    // More rows than one upsert statement carries, so chunks are exercised too.
    let batch: Vec<RollupRow> = (0..1_200)
        .map(|i| row("conversation", "Pim", "visit", &format!("line{i}"), "", 1))
        .collect();
    let rounds = 6;
    let mut tasks = Vec::new();
    for round in 0..rounds {
        let store = if round % 2 == 0 {
            first.clone()
        } else {
            second.clone()
        };
        let batch = batch.clone();
        tasks.push(tokio::spawn(async move { store.add_rollups(&batch).await }));
    }
    for task in tasks {
        task.await.expect("joined").expect("added");
    }
    let rows = first.rollups("conversation", "Pim").await.expect("read");
    assert_eq!(rows.len(), 1_200);
    assert!(rows.iter().all(|r| r.count == rounds), "{:?}", &rows[..3]);
}

on_both_backends!(
    rollups_add_counts_and_keep_keys_apart,
    rollups_from_two_instances_at_once_lose_nothing,
);
