//! The web view's assets, compiled into the binary (no CDN, no build step): one page, its
//! scripts (loaded in order, each one job: heat, view, labels, tooltip, the sim report's
//! viewer, then the app that uses them) and its style, served by path.

const JS: &str = "text/javascript; charset=utf-8";

/// The content type and body of the asset at `path`, if there is one.
pub fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some((
            "text/html; charset=utf-8",
            include_str!("../assets/index.html"),
        )),
        "/app.js" => Some((JS, include_str!("../assets/app.js"))),
        "/heat.js" => Some((JS, include_str!("../assets/heat.js"))),
        "/view.js" => Some((JS, include_str!("../assets/view.js"))),
        "/labels.js" => Some((JS, include_str!("../assets/labels.js"))),
        "/tooltip.js" => Some((JS, include_str!("../assets/tooltip.js"))),
        "/sim.js" => Some((JS, include_str!("../assets/sim.js"))),
        "/app.css" => Some(("text/css; charset=utf-8", include_str!("../assets/app.css"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{asset, JS};

    /// Every script the page loads is served: a missing one would leave the view blank.
    #[test]
    fn every_script_the_page_loads_is_served() {
        let (_, page) = asset("/").unwrap();
        let scripts: Vec<&str> = page
            .split("<script src=\"")
            .skip(1)
            .map(|s| s.split('"').next().unwrap())
            .collect();
        assert_eq!(scripts.len(), 6, "{scripts:?}");
        for script in scripts {
            assert!(asset(script).is_some_and(|(t, _)| t == JS), "{script}");
        }
    }
}
