//! The element names HTML's implied ends depend on (WHATWG HTML, "tree
//! construction"): which tags close an open `<p>`, which may stand in
//! `<head>`, and where a search for an open element stops. Plain data, no
//! conversion state.

/// The element names the implied-end rules look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tag {
    A,
    Body,
    Button,
    Caption,
    Dd,
    Dl,
    Dt,
    Head,
    Heading,
    Html,
    Li,
    List,
    P,
    Table,
    Cell,
    Tr,
    Section,
    Template,
    Other,
}

impl Tag {
    pub(super) fn of(name: &str) -> Tag {
        match name {
            "a" => Tag::A,
            "body" => Tag::Body,
            "button" => Tag::Button,
            "caption" => Tag::Caption,
            "dd" => Tag::Dd,
            "dl" => Tag::Dl,
            "dt" => Tag::Dt,
            "head" => Tag::Head,
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => Tag::Heading,
            "html" => Tag::Html,
            "li" => Tag::Li,
            "ul" | "ol" | "menu" => Tag::List,
            "p" => Tag::P,
            "table" => Tag::Table,
            "td" | "th" => Tag::Cell,
            "tr" => Tag::Tr,
            "thead" | "tbody" | "tfoot" => Tag::Section,
            "template" => Tag::Template,
            _ => Tag::Other,
        }
    }

    /// Where a search for an open element to close stops (HTML's "button
    /// scope", reduced to the elements that matter here).
    pub(super) fn is_scope_boundary(self) -> bool {
        matches!(self, Tag::Html | Tag::Table | Tag::Cell | Tag::Caption | Tag::Template | Tag::Button)
    }
}

/// Start tags that close an open `<p>` (WHATWG HTML, "in body" insertion
/// mode).
pub(super) fn closes_p(name: &str) -> bool {
    matches!(
        name,
        "address"
            | "article"
            | "aside"
            | "blockquote"
            | "center"
            | "dd"
            | "details"
            | "dialog"
            | "dir"
            | "div"
            | "dl"
            | "dt"
            | "fieldset"
            | "figcaption"
            | "figure"
            | "footer"
            | "form"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "hgroup"
            | "hr"
            | "li"
            | "listing"
            | "main"
            | "menu"
            | "nav"
            | "ol"
            | "p"
            | "pre"
            | "search"
            | "section"
            | "summary"
            | "table"
            | "ul"
            | "xmp"
    )
}

/// Elements that may stand in `<head>`; any other element ends it.
pub(super) fn in_head(name: &str) -> bool {
    matches!(name, "base" | "link" | "meta" | "noscript" | "script" | "style" | "template" | "title")
}
