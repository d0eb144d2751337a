//! Kubernetes label selectors of equality (`key=value`, `key!=value`, `key`, `!key`), as
//! `kubectl get -l` takes them, to pick netloom's pods from a list.

use super::pods::PodsError;
use std::collections::BTreeMap;

/// One term of a label selector.
pub(super) enum Term {
    /// `key=value` (or `==`): the label is there with that value.
    Equals(String, String),
    /// `key!=value`: the label is not there with that value (absent matches, as in kubectl).
    Differs(String, String),
    /// `key`: the label is there.
    Has(String),
    /// `!key`: the label is not there.
    Lacks(String),
}

/// The terms of `selector`; set terms (`key in (a,b)`) are refused, not misread.
pub(super) fn parse(selector: &str) -> Result<Vec<Term>, PodsError> {
    let bad = |reason: String| PodsError::Selector {
        selector: selector.into(),
        reason,
    };
    let mut terms = Vec::new();
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if term.contains(" in ") || term.contains(" notin ") || term.contains('(') {
            return Err(bad(format!("set terms ({term}) are not read")));
        }
        let key = |k: &str| -> Result<String, PodsError> {
            let k = k.trim();
            match k.is_empty() || k.contains(['=', '!', ' ']) {
                true => Err(bad(format!("{term:?} has no key"))),
                false => Ok(k.to_string()),
            }
        };
        terms.push(if let Some((k, v)) = term.split_once("!=") {
            Term::Differs(key(k)?, v.trim().into())
        } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
            Term::Equals(key(k)?, v.trim().into())
        } else if let Some(k) = term.strip_prefix('!') {
            Term::Lacks(key(k)?)
        } else {
            Term::Has(key(term)?)
        });
    }
    Ok(terms)
}

/// Whether `labels` satisfy every term.
pub(super) fn matches(terms: &[Term], labels: &BTreeMap<String, String>) -> bool {
    terms.iter().all(|t| match t {
        Term::Equals(k, v) => labels.get(k) == Some(v),
        Term::Differs(k, v) => labels.get(k) != Some(v),
        Term::Has(k) => labels.contains_key(k),
        Term::Lacks(k) => !labels.contains_key(k),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors_match_as_kubectl_s_equality_terms() {
        let labels: BTreeMap<String, String> = [("app", "netloom"), ("tier", "emu")]
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .into();
        let pick = |s: &str| matches(&parse(s).unwrap(), &labels);
        assert!(pick("app=netloom,tier==emu"));
        assert!(pick("app, !zone, tier!=web"));
        assert!(pick(""));
        assert!(!pick("app=netloom,tier=web"));
        assert!(!pick("!app"));
        assert!(!pick("zone"));
        let e = parse("=netloom").err().unwrap().to_string();
        assert_eq!(e, "label selector \"=netloom\": \"=netloom\" has no key; write key=value, key!=value, key or !key, joined by commas");
        assert!(parse("app in (a,b)").is_err());
    }
}
