//! A lab's name: `t`, its tag and this process's id, with each tag belonging to one module.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Each tag a lab was named with so far, and the source file that named it first.
static CLAIMED: Mutex<BTreeMap<String, &'static str>> = Mutex::new(BTreeMap::new());

/// The name of a lab tagged `tag` by `file`: unique to the test while every module of the
/// binary tags its labs with tags of its own. Its namespaces, registry entries, directories
/// and devices are named after it, so a tag two modules used would let one test's leftovers
/// count as another's. The tests of a module may reuse its tags: they ran in one process
/// before the fold too. Panics, naming both files, when another file claimed `tag` first.
pub fn lab_name(tag: &str, file: &'static str) -> String {
    let mut claimed = CLAIMED.lock().unwrap_or_else(|e| e.into_inner());
    let first = *claimed.entry(tag.to_string()).or_insert(file);
    assert_eq!(
        first, file,
        "lab tag {tag:?} is {first}'s: give the lab in {file} a tag of its own"
    );
    // The pid's last five digits keep device names made of the name (a machine's veth
    // `{name}v1`) within Linux's 15 characters for tags of up to 7.
    format!("t{}{}", tag, std::process::id() % 100_000)
}
