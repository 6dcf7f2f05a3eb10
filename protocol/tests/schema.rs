//! The committed JSON Schemas match the Rust types.

use std::path::Path;

use banter_protocol::schema::json_schemas;

#[test]
fn committed_json_schemas_are_up_to_date() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/schema");
    let bless = std::env::var_os("BANTER_BLESS").is_some();
    for (name, fresh) in json_schemas() {
        let path = dir.join(name);
        if bless {
            std::fs::create_dir_all(&dir).expect("create docs/schema");
            std::fs::write(&path, &fresh).expect("write schema");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == fresh,
            "{} is out of date; regenerate with `BANTER_BLESS=1 cargo test -p banter-protocol --test schema`",
            path.display()
        );
    }
}
