//! Answering requests against the shaper: set, delete, show and stop, within each caller's
//! rights and limits.

use super::packet_loop::Handle;
use super::{Reply, Request};
use crate::classifier::{Rule, ROOT};
use crate::kernel;
use crate::limits::{Tenancy, Usage};
use crate::shaper::{Shaper, Target};
use crate::spec::{parse_selector, Cgroup, LinkSpec, Selector, SYSTEM_PROFILES};
use netloom_time::Instant;
use std::path::PathBuf;

/// What a request comes to.
#[derive(Debug)]
pub(super) enum Outcome {
    /// Its reply, now.
    Reply(Reply),
    /// The kernel's rules must change first: the loop has them made off the packet path
    /// (`None`: removed) and then gives `reply`, or, if the kernel refuses, undoes `undo` and
    /// replies with the kernel's error.
    Install {
        /// The rules the kernel must have.
        rules: Option<Vec<Rule>>,
        /// The reply once it has them.
        reply: Reply,
        /// The link made for this request, removed again if its rules cannot be installed.
        undo: Option<Undo>,
    },
    /// `stop`: the loop removes the rules, replies and ends.
    Stop(Reply),
}

/// A link to remove again: its owner and selector.
#[derive(Debug)]
pub(super) struct Undo {
    /// Its owner.
    pub(super) uid: u32,
    /// Its selector.
    pub(super) selector: Selector,
}

/// The rules the kernel must have for `shaper`'s links: none at all once it has none.
pub(super) fn kernel_rules(shaper: &Shaper<Handle>) -> Option<Vec<Rule>> {
    (!shaper.is_empty()).then(|| shaper.classifier().rules().to_vec())
}

/// Answers one request from `uid` (a line that did not parse is its error).
pub(super) fn serve(
    uid: u32,
    request: Result<Request, serde_json::Error>,
    shaper: &mut Shaper<Handle>,
    tenancy: &mut Tenancy,
    now: Instant,
) -> Outcome {
    // What the caller may see and change: root everything, a user their own links.
    let mine = (uid != ROOT).then_some(uid);
    // An edited limits file applies from this request on (the quotas of packets held too); a
    // broken one is logged and the limits read before stay.
    match tenancy.reload_if_changed() {
        Ok(true) => {
            for user in shaper.users(None) {
                shaper.set_quota(user.uid, tenancy.quota(user.uid));
            }
        }
        Ok(false) => {}
        Err(e) => eprintln!("netloom shape: {e}"),
    }
    // A line that did not parse does not count against the user's rate.
    let request = match request {
        Ok(request) => tenancy.admit(uid, now).map(|()| request),
        Err(e) => return Outcome::Reply(error_reply(format!("bad request: {e}"))),
    };
    match request {
        Err(e) => Outcome::Reply(error_reply(e.to_string())),
        Ok(Request::Stop) if mine.is_some() => Outcome::Reply(error_reply(format!(
            "only root may stop the shaping process (you are uid {uid}); `netloom shape delete ID` removes one of your links"
        ))),
        Ok(Request::Stop) => {
            let n = shaper.report(now, None).len();
            Outcome::Stop(Reply {
                message: Some(format!("stopped; removed {n} link(s)")),
                ..Reply::default()
            })
        }
        Ok(Request::Show) => Outcome::Reply(Reply {
            links: shaper.report(now, mine),
            users: shaper.users(mine),
            ..Reply::default()
        }),
        Ok(Request::Set { words, profiles }) => {
            set(shaper, tenancy, uid, now, &words, &profiles)
        }
        Ok(Request::Delete { words }) => delete(shaper, mine, &words),
    }
}

pub(super) fn error_reply(error: String) -> Reply {
    Reply {
        error: Some(error),
        ..Reply::default()
    }
}

pub(super) fn set(
    shaper: &mut Shaper<Handle>,
    tenancy: &Tenancy,
    uid: u32,
    now: Instant,
    words: &[String],
    profiles: &[PathBuf],
) -> Outcome {
    // The daemon reads profiles as root: a user's come from the system directory only, by name.
    let system = [PathBuf::from(SYSTEM_PROFILES)];
    let profiles = match uid {
        ROOT => profiles,
        _ => {
            if let Some(w) = words
                .iter()
                .find(|w| w.starts_with("profile=") && w.contains('/'))
            {
                return Outcome::Reply(error_reply(format!(
                    "{w}: a user's profile is a name in {SYSTEM_PROFILES}, not a path (the shaping process reads it as root)"
                )));
            }
            &system[..]
        }
    };
    let spec = match LinkSpec::parse(words, profiles) {
        Ok(spec) => spec,
        Err(e) => return Outcome::Reply(error_reply(e.to_string())),
    };
    if uid != ROOT {
        if let Some(other) = spec.selector.uid.filter(|&u| u != uid) {
            return Outcome::Reply(error_reply(format!(
                "uid={other}: a user shapes only their own traffic (you are uid {uid}; your links match your sockets without uid=)"
            )));
        }
        if let Some(c) = &spec.cgroup {
            if let Err(e) = may_name(uid, c) {
                return Outcome::Reply(error_reply(e.to_string()));
            }
        }
        let (rules, pipes) = shaper.usage_with(uid, &spec);
        let (request, all) = shaper.kernel_usage_with(uid, &spec, kernel::lines);
        let usage = Usage {
            rules,
            pipes,
            kernel_rules_per_request: request,
            kernel_rules: all,
        };
        if let Err(e) = tenancy.allow_all(uid, usage) {
            return Outcome::Reply(error_reply(e.to_string()));
        }
    }
    shaper.set_quota(uid, tenancy.quota(uid));
    let selector = spec.selector.clone();
    let before = shaper.classifier().rules().to_vec();
    let (id, replaced) = shaper.set(now, uid, spec, words.join(" "));
    let reply = Reply {
        message: Some(match replaced {
            true => format!("link {id} changed"),
            false => format!("link {id} made"),
        }),
        ..Reply::default()
    };
    // A change of parameters leaves the rules as they were: the kernel is not asked.
    if shaper.classifier().rules() == before.as_slice() {
        return Outcome::Reply(reply);
    }
    Outcome::Install {
        rules: kernel_rules(shaper),
        reply,
        undo: (!replaced).then_some(Undo { uid, selector }),
    }
}

/// A cgroup a user may not name: they do not own its directory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cgroup={path}: a user names only a cgroup whose directory they own (it is uid {owner}'s; you are uid {uid}), such as one under their systemd user@{uid}.service")]
pub(super) struct NotTheirCgroup {
    /// The cgroup, as named.
    path: String,
    /// The owner of its directory.
    owner: u32,
    /// The user who named it.
    uid: u32,
}

/// May user `uid` name cgroup `c`? Only if they own its directory: what systemd gives a user
/// as a delegated subtree (`user@UID.service` and below), and what they can put processes in;
/// their rules also carry their uid, so even so they take only their own sockets in it.
pub(super) fn may_name(uid: u32, c: &Cgroup) -> Result<(), NotTheirCgroup> {
    match c.owner == uid {
        true => Ok(()),
        false => Err(NotTheirCgroup {
            path: c.path.clone(),
            owner: c.owner,
            uid,
        }),
    }
}

pub(super) fn delete(shaper: &mut Shaper<Handle>, mine: Option<u32>, words: &[String]) -> Outcome {
    let target = match words {
        [one] if one.parse::<u32>().is_ok() => Target::Id(one.parse().expect("a number")),
        _ => {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            match parse_selector(&words) {
                Ok((selector, [])) => Target::Selector(selector),
                Ok((_, rest)) => {
                    return Outcome::Reply(error_reply(format!(
                        "delete takes a link's id or its selector, not its pipes ({:?} ...)",
                        rest[0]
                    )))
                }
                Err(e) => return Outcome::Reply(error_reply(e.to_string())),
            }
        }
    };
    match shaper.delete(mine, &target) {
        // The answer waits for the rules (removed with the last link), so the caller finds
        // them gone.
        Ok(id) => Outcome::Install {
            rules: kernel_rules(shaper),
            reply: Reply {
                message: Some(format!("link {id} deleted")),
                ..Reply::default()
            },
            undo: None,
        },
        Err(e) => Outcome::Reply(error_reply(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_names_only_a_cgroup_they_own() {
        let c = Cgroup {
            path: "/user.slice/user-1001.slice/user@1001.service/app".into(),
            id: 40,
            owner: 1001,
        };
        assert_eq!(may_name(1001, &c), Ok(()));
        let refused = may_name(1002, &c).unwrap_err().to_string();
        assert!(
            refused.contains("uid 1001's; you are uid 1002"),
            "{refused}"
        );
    }
}
