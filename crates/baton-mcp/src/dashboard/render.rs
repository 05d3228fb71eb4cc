//! Markdown to safe HTML for the dashboard (artifacts, questions).
//!
//! Rendered on the server with pulldown-cmark, then made safe: raw HTML in
//! the Markdown (blocks and inline) is shown as text, never passed through;
//! a link keeps its target only when it is `http:`, `https:`, `mailto:`, a
//! fragment or a relative path (never `javascript:`, `data:` or any other
//! scheme); an image is shown as a link to its source, so an artifact can
//! make the browser fetch nothing. The page's Content-Security-Policy
//! (no inline scripts, nothing from other origins) is the second wall.

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

/// Renders `markdown` to HTML that holds no markup from the input.
pub fn markdown_to_html(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES;
    let mut in_image = false;
    let events = Parser::new_ext(markdown, options).filter_map(|event| {
        Some(match event {
            // Raw HTML is text, escaped on output.
            Event::Html(html) | Event::InlineHtml(html) => Event::Text(html),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url: safe_url(dest_url),
                title,
                id,
            }),
            // An image becomes a link to its source (nothing is fetched).
            Event::Start(Tag::Image {
                dest_url,
                title,
                id,
                ..
            }) => {
                in_image = true;
                Event::Start(Tag::Link {
                    link_type: LinkType::Inline,
                    dest_url: safe_url(dest_url),
                    title,
                    id,
                })
            }
            Event::End(TagEnd::Image) => {
                in_image = false;
                Event::End(TagEnd::Link)
            }
            Event::Text(t) if in_image && t.is_empty() => return None,
            other => other,
        })
    });
    let mut html = String::with_capacity(markdown.len() * 3 / 2);
    pulldown_cmark::html::push_html(&mut html, events);
    html
}

/// `url` when its scheme is safe to follow, else `#`.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim().to_ascii_lowercase();
    let scheme = lower
        .split_once(':')
        .map(|(s, _)| s)
        .filter(|s| !s.contains(['/', '?', '#']));
    match scheme {
        None => url,
        Some("http" | "https" | "mailto") => url,
        Some(_) => CowStr::Borrowed("#"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders() {
        let html = markdown_to_html("# Design\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] done\n");
        assert!(html.contains("<h1>Design</h1>"), "{html}");
        assert!(html.contains("<table>"), "{html}");
        assert!(html.contains("checkbox"), "{html}");
    }

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = markdown_to_html(
            "<script>alert(1)</script>\n\nHello <img src=x onerror=alert(2)> <b>bold</b>\n\n<div onclick=\"x()\">block</div>\n",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<b>"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn only_safe_link_targets_survive() {
        let html = markdown_to_html(
            "[a](javascript:alert(1)) [b](JaVaScRiPt:alert(1)) [c](data:text/html,x) [d](https://example.com/x) [e](#top) [f](design.md) [g](vbscript:x) [h](mailto:a@b.c)",
        );
        assert!(!html.to_lowercase().contains("javascript:"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(!html.contains("vbscript:"), "{html}");
        assert!(html.contains("href=\"https://example.com/x\""), "{html}");
        assert!(html.contains("href=\"#top\""), "{html}");
        assert!(html.contains("href=\"design.md\""), "{html}");
        assert!(html.contains("href=\"mailto:a@b.c\""), "{html}");
    }

    #[test]
    fn images_become_links_and_fetch_nothing() {
        let html = markdown_to_html(
            "![diagram](https://tracker.example/pixel.png) ![x](javascript:alert(1))",
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("href=\"https://tracker.example/pixel.png\">diagram</a>"),
            "{html}"
        );
        assert!(!html.contains("javascript:"), "{html}");
    }

    #[test]
    fn attribute_injection_through_titles_and_urls_is_escaped() {
        let html =
            markdown_to_html("[x](https://a.example/\"onmouseover=\"alert(1) \"t\\\"itle\")");
        assert!(!html.contains("\"onmouseover"), "{html}");
    }
}
