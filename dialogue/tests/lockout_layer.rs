//! The lockout layer is merged into every conversation, so it may not take over their entry or
//! their speaker.

use banter_dialogue::content::Content;

#[test]
fn a_lockout_layer_that_sets_first_node_or_speaker_is_an_error() {
    let root = std::env::temp_dir().join(format!("banter-lockout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for folder in ["dialogue/base", "dialogue/lockout"] {
        std::fs::create_dir_all(root.join(folder)).expect("folders");
    }
    std::fs::write(
        root.join("dialogue/base/Mara.json"),
        r#"{"FirstNode":"Hi","Speaker":"Mara","Hi":{"Text":"Hello.","Close":true}}"#,
    )
    .expect("base");
    std::fs::write(
        root.join("dialogue/lockout/Tutorial.json"),
        r#"{"FirstNode":"Stage1","Speaker":"Tutor","Stage1":{"Text":"Not yet.","Close":true}}"#,
    )
    .expect("lockout");
    let (content, diagnostics) = Content::load(&root);
    let fields: Vec<_> = diagnostics
        .iter()
        .filter(|d| d.is_error() && d.file.ends_with("Tutorial.json"))
        .filter_map(|d| d.field.clone())
        .collect();
    assert_eq!(fields, vec!["FirstNode".to_owned(), "Speaker".to_owned()]);
    assert!(content.conversation("Mara").is_some());
    let _ = std::fs::remove_dir_all(&root);
}
