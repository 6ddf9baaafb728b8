//! Which of its requested names a CRD gets, as upstream's naming controller decides: a name is
//! accepted when it is the one already accepted or no CRD of the group has accepted it yet
//! (plural, singular and short names share one namespace, kinds and list kinds another); a
//! conflicting name keeps its previously accepted value and sets `NamesAccepted=False` with the
//! reason of the last conflict found (`PluralConflict`, `SingularConflict`,
//! `ShortNamesConflict`, `KindConflict`, `ListKindConflict`). A CRD that never had all its
//! names accepted is not `Established`, and is established once they are (after the CRD that
//! held them is deleted or renamed).

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::{condition, set_condition, str_at};
use crate::meta;
use crate::storage::{Snapshot, collection_prefix};

/// The names the CRDs of one group have accepted.
#[derive(Debug, Default, Clone)]
pub struct Taken {
    /// Plurals, singulars and short names.
    resources: BTreeSet<String>,
    /// Kinds and list kinds.
    kinds: BTreeSet<String>,
}

impl Taken {
    /// The accepted names of every stored CRD of `group` (the one being written included, as
    /// upstream reads them back).
    pub fn in_group(snapshot: &Snapshot, group: &str) -> Self {
        let mut taken = Taken::default();
        let prefix = collection_prefix("apiextensions.k8s.io", "customresourcedefinitions", None);
        for (_, crd) in snapshot.range(&prefix, None) {
            if str_at(crd, "spec.group") == group {
                taken.insert(meta::path(crd, "status.acceptedNames"));
            }
        }
        taken
    }

    /// Marks a plural (served by a built-in resource) as taken.
    pub fn insert_plural(&mut self, plural: &str) {
        self.resources.insert(plural.to_string());
    }

    fn insert(&mut self, names: Option<&Value>) {
        let Some(names) = names else { return };
        for key in ["plural", "singular"] {
            self.resources.insert(str_at(names, key).to_string());
        }
        self.resources
            .extend(meta::strings(names.get("shortNames")));
        for key in ["kind", "listKind"] {
            self.kinds.insert(str_at(names, key).to_string());
        }
    }
}

/// Upstream's `equalToAcceptedOrFresh`.
fn accepted_or_fresh(
    requested: &str,
    accepted: &str,
    used: &BTreeSet<String>,
) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// Whether a CRD's requested names differ from its accepted ones (the naming controller has
/// work to do).
pub fn pending(crd: &Value) -> bool {
    let names = |path: &str| {
        let mut m = meta::path(crd, path)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        drop_empty(&mut m);
        m
    };
    names("spec.names") != names("status.acceptedNames")
}

/// Removes the optional names that are empty (Go omits them).
fn drop_empty(names: &mut Map<String, Value>) {
    names.retain(|key, v| {
        matches!(key.as_str(), "plural" | "kind")
            || !(v.as_str() == Some("") || v.as_array().is_some_and(Vec::is_empty))
    });
}

/// Sets `status.acceptedNames` and the `NamesAccepted` and `Established` conditions of `crd`
/// (its `spec.names` defaulted) from the names `taken` in its group.
pub fn accept(crd: &mut Value, taken: &Taken) {
    let requested = meta::path(crd, "spec.names").cloned().unwrap_or(json!({}));
    let accepted = meta::path(crd, "status.acceptedNames")
        .cloned()
        .unwrap_or(json!({}));
    let mut names: Map<String, Value> = accepted.as_object().cloned().unwrap_or_default();
    let mut conflict: Option<(&str, String)> = None;
    let mut take = |key: &str, used: &BTreeSet<String>, reason: &'static str| {
        let want = str_at(&requested, key);
        match accepted_or_fresh(want, str_at(&accepted, key), used) {
            Ok(()) => {
                names.insert(key.to_string(), json!(want));
            }
            Err(why) => conflict = Some((reason, why)),
        }
    };
    take("plural", &taken.resources, "PluralConflict");
    take("singular", &taken.resources, "SingularConflict");
    let wanted_short = meta::strings(requested.get("shortNames"));
    let accepted_short = meta::strings(accepted.get("shortNames"));
    if wanted_short != accepted_short {
        let own = [str_at(&accepted, "plural"), str_at(&accepted, "singular")];
        let mut errors: Vec<String> = Vec::new();
        for short in &wanted_short {
            if accepted_short.contains(short) || own.contains(&short.as_str()) {
                continue;
            }
            if let Err(why) = accepted_or_fresh(short, "", &taken.resources)
                && !errors.contains(&why)
            {
                errors.push(why);
            }
        }
        match errors.len() {
            0 => {
                names.insert("shortNames".into(), json!(wanted_short));
            }
            1 => conflict = Some(("ShortNamesConflict", errors.remove(0))),
            _ => {
                conflict = Some(("ShortNamesConflict", format!("[{}]", errors.join(", "))));
            }
        }
    }
    take_kind(
        &mut names,
        &requested,
        &accepted,
        "kind",
        taken,
        "KindConflict",
        &mut conflict,
    );
    take_kind(
        &mut names,
        &requested,
        &accepted,
        "listKind",
        taken,
        "ListKindConflict",
        &mut conflict,
    );
    match requested.get("categories") {
        Some(c) => names.insert("categories".into(), c.clone()),
        None => names.remove("categories"),
    };
    for key in ["plural", "kind"] {
        names.entry(key).or_insert(json!(""));
    }
    drop_empty(&mut names);
    meta::set_path(crd, "status.acceptedNames", Value::Object(names));
    let was_established = is_true(crd, "Established");
    match conflict {
        None => {
            set_condition(
                crd,
                condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
            );
            if !was_established {
                set_condition(
                    crd,
                    condition(
                        "Established",
                        "True",
                        "InitialNamesAccepted",
                        "the initial names have been accepted",
                    ),
                );
            }
        }
        Some((reason, message)) => {
            set_condition(crd, condition("NamesAccepted", "False", reason, &message));
            if !was_established {
                set_condition(
                    crd,
                    condition(
                        "Established",
                        "False",
                        "NotAccepted",
                        "not all names are accepted",
                    ),
                );
            }
        }
    }
}

/// The kind or list kind (`key`) check, against the kinds taken.
fn take_kind(
    names: &mut Map<String, Value>,
    requested: &Value,
    accepted: &Value,
    key: &str,
    taken: &Taken,
    reason: &'static str,
    conflict: &mut Option<(&'static str, String)>,
) {
    let want = str_at(requested, key);
    match accepted_or_fresh(want, str_at(accepted, key), &taken.kinds) {
        Ok(()) => {
            names.insert(key.to_string(), json!(want));
        }
        Err(why) => *conflict = Some((reason, why)),
    }
}

/// Whether the condition `kind` of a CRD is `True`.
pub fn is_true(crd: &Value, kind: &str) -> bool {
    meta::path(crd, "status.conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| str_at(c, "type") == kind && str_at(c, "status") == "True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(plural: &str, kind: &str, short: &[&str]) -> Value {
        json!({"spec": {"group": "x.io", "names": {"plural": plural, "singular": kind.to_lowercase(),
            "kind": kind, "listKind": format!("{kind}List"), "shortNames": short}}})
    }

    fn taken_by(others: &[Value]) -> Taken {
        let mut taken = Taken::default();
        for o in others {
            taken.insert(o.pointer("/spec/names"));
        }
        taken
    }

    fn reason(crd: &Value) -> (String, String) {
        let c = crd["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "NamesAccepted"))
            .cloned()
            .unwrap_or_default();
        (
            c["reason"].as_str().unwrap_or("").into(),
            c["message"].as_str().unwrap_or("").into(),
        )
    }

    #[test]
    fn free_names_are_accepted_and_established() {
        let mut c = crd("widgets", "Widget", &["wd"]);
        accept(&mut c, &Taken::default());
        assert_eq!(c["status"]["acceptedNames"], c["spec"]["names"]);
        assert_eq!(
            reason(&c),
            ("NoConflicts".into(), "no conflicts found".into())
        );
        assert!(is_true(&c, "Established"));
    }

    #[test]
    fn each_conflict_keeps_the_accepted_value_and_the_last_reason_wins() {
        let other = crd("gadgets", "Gadget", &["gd"]);
        let mut c = crd("widgets", "Gadget", &["gd", "wd"]);
        accept(&mut c, &taken_by(std::slice::from_ref(&other)));
        // Singular, kind and list kind all conflict: the last one checked is reported.
        assert_eq!(
            reason(&c),
            (
                "ListKindConflict".into(),
                "\"GadgetList\" is already in use".into()
            )
        );
        let names = &c["status"]["acceptedNames"];
        assert_eq!(names["plural"], "widgets");
        assert_eq!(names["kind"], "", "never accepted");
        assert!(names.get("shortNames").is_none());
        assert!(!is_true(&c, "Established"));

        let mut c = crd("widgets", "Widget", &["gd", "gadget"]);
        accept(&mut c, &taken_by(&[other]));
        assert_eq!(
            reason(&c),
            (
                "ShortNamesConflict".into(),
                "[\"gd\" is already in use, \"gadget\" is already in use]".into()
            )
        );
    }

    #[test]
    fn a_crd_is_established_once_its_names_are_free() {
        let other = crd("gadgets", "Gadget", &[]);
        let mut c = crd("gadgets", "Widget", &[]);
        accept(&mut c, &taken_by(&[other]));
        assert_eq!(reason(&c).0, "PluralConflict");
        assert!(pending(&c));
        accept(&mut c, &Taken::default());
        assert_eq!(reason(&c).0, "NoConflicts");
        assert!(is_true(&c, "Established"));
        assert!(!pending(&c));
    }
}
