//! The web view's assets, compiled into the binary (no CDN, no build step): one page, its
//! script and its style, served by path.

/// The content type and body of the asset at `path`, if there is one.
pub fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    match path {
        "/" | "/index.html" => Some((
            "text/html; charset=utf-8",
            include_str!("../assets/index.html"),
        )),
        "/app.js" => Some((
            "text/javascript; charset=utf-8",
            include_str!("../assets/app.js"),
        )),
        "/app.css" => Some(("text/css; charset=utf-8", include_str!("../assets/app.css"))),
        _ => None,
    }
}
