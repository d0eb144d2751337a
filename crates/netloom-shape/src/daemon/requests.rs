//! Answering requests against the shaper: set, delete, show and stop, within each caller's
//! rights and limits.

use super::packet_loop::{Handle, LoopIo};
use super::{Reply, Request};
use crate::classifier::ROOT;
use crate::limits::Tenancy;
use crate::shaper::{Shaper, Target};
use crate::spec::{parse_selector, Cgroup, LinkSpec, SYSTEM_PROFILES};
use netloom_time::Instant;
use std::path::PathBuf;

/// Answers one request from `uid` (a line that did not parse is its error); true with it if it
/// was `stop`.
pub(super) fn serve(
    io: &mut impl LoopIo,
    uid: u32,
    request: Result<Request, serde_json::Error>,
    shaper: &mut Shaper<Handle>,
    tenancy: &mut Tenancy,
    now: Instant,
) -> (Reply, bool) {
    // What the caller may see and change: root everything, a user their own links.
    let mine = (uid != ROOT).then_some(uid);
    // An edited limits file applies from this request on; a broken one is logged and the
    // limits read before stay.
    if let Err(e) = tenancy.reload_if_changed() {
        eprintln!("netloom shape: {e}");
    }
    // A line that did not parse does not count against the user's rate.
    let request = match request {
        Ok(request) => tenancy.admit(uid, now).map(|()| request),
        Err(e) => return (error_reply(format!("bad request: {e}")), false),
    };
    match request {
        Err(e) => (error_reply(e.to_string()), false),
        Ok(Request::Stop) if mine.is_some() => (
            error_reply(format!(
                "only root may stop the shaping process (you are uid {uid}); `netloom shape delete ID` removes one of your links"
            )),
            false,
        ),
        Ok(Request::Stop) => {
            // The rules go before the answer, so the caller finds them gone.
            io.remove();
            let n = shaper.report(now, None).len();
            let message = Some(format!("stopped; removed {n} link(s)"));
            (
                Reply {
                    message,
                    ..Reply::default()
                },
                true,
            )
        }
        Ok(Request::Show) => (
            Reply {
                links: shaper.report(now, mine),
                ..Reply::default()
            },
            false,
        ),
        Ok(Request::Set { words, profiles }) => {
            (set(io, shaper, tenancy, uid, now, &words, &profiles), false)
        }
        Ok(Request::Delete { words }) => (delete(io, shaper, mine, &words), false),
    }
}

pub(super) fn error_reply(error: String) -> Reply {
    Reply {
        error: Some(error),
        ..Reply::default()
    }
}

pub(super) fn set(
    io: &mut impl LoopIo,
    shaper: &mut Shaper<Handle>,
    tenancy: &Tenancy,
    uid: u32,
    now: Instant,
    words: &[String],
    profiles: &[PathBuf],
) -> Reply {
    // The daemon reads profiles as root: a user's come from the system directory only, by name.
    let system = [PathBuf::from(SYSTEM_PROFILES)];
    let profiles = match uid {
        ROOT => profiles,
        _ => {
            if let Some(w) = words
                .iter()
                .find(|w| w.starts_with("profile=") && w.contains('/'))
            {
                return error_reply(format!(
                    "{w}: a user's profile is a name in {SYSTEM_PROFILES}, not a path (the shaping process reads it as root)"
                ));
            }
            &system[..]
        }
    };
    let spec = match LinkSpec::parse(words, profiles) {
        Ok(spec) => spec,
        Err(e) => return error_reply(e.to_string()),
    };
    if uid != ROOT {
        if let Some(other) = spec.selector.uid.filter(|&u| u != uid) {
            return error_reply(format!(
                "uid={other}: a user shapes only their own traffic (you are uid {uid}; your links match your sockets without uid=)"
            ));
        }
        if let Some(c) = &spec.cgroup {
            if let Err(e) = may_name(uid, c) {
                return error_reply(e.to_string());
            }
        }
        let (rules, pipes) = shaper.usage_with(uid, &spec);
        if let Err(e) = tenancy.allow(uid, rules, pipes) {
            return error_reply(e.to_string());
        }
    }
    let selector = spec.selector.clone();
    let before = shaper.classifier().rules().to_vec();
    let (id, replaced) = shaper.set(now, uid, spec, words.join(" "));
    // A change of parameters leaves the rules as they were: the kernel is not asked.
    if shaper.classifier().rules() != before.as_slice() {
        if let Err(e) = io.install(shaper.classifier().rules()) {
            if !replaced {
                let _ = shaper.delete(Some(uid), &Target::Selector(selector));
                let _ = io.install(shaper.classifier().rules());
            }
            return error_reply(e.to_string());
        }
    }
    Reply {
        message: Some(match replaced {
            true => format!("link {id} changed"),
            false => format!("link {id} made"),
        }),
        ..Reply::default()
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

pub(super) fn delete(
    io: &mut impl LoopIo,
    shaper: &mut Shaper<Handle>,
    mine: Option<u32>,
    words: &[String],
) -> Reply {
    let target = match words {
        [one] if one.parse::<u32>().is_ok() => Target::Id(one.parse().expect("a number")),
        _ => {
            let words: Vec<&str> = words.iter().map(String::as_str).collect();
            match parse_selector(&words) {
                Ok((selector, [])) => Target::Selector(selector),
                Ok((_, rest)) => {
                    return error_reply(format!(
                        "delete takes a link's id or its selector, not its pipes ({:?} ...)",
                        rest[0]
                    ))
                }
                Err(e) => return error_reply(e.to_string()),
            }
        }
    };
    match shaper.delete(mine, &target) {
        Ok(id) => {
            // The last link gone, the process ends: its chains go before the answer.
            if shaper.is_empty() {
                io.remove();
            } else if let Err(e) = io.install(shaper.classifier().rules()) {
                return error_reply(e.to_string());
            }
            Reply {
                message: Some(format!("link {id} deleted")),
                ..Reply::default()
            }
        }
        Err(e) => error_reply(e.to_string()),
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
