/// The web chat's assets (served by WebApp at `/`, `/app.css`, `/app.js`): plain HTML, CSS and
/// JavaScript with nothing loaded from elsewhere, so the app works with no internet access.
///
/// They are the files in `Web/`, which SwiftPM embeds in the binary as byte arrays
/// (`resources: [.embedInCode(...)]` in Package.swift, read through the generated
/// `PackageResources`): a copied or installed binary needs no resource bundle beside it.
enum WebAssets {
    /// The page: the app's screens, shown and hidden by app.js (`Web/index.html`).
    static let indexHTML: [UInt8] = PackageResources.index_html
    /// The styles: two panes, one at a time on a narrow window; light and dark (`Web/app.css`).
    static let appCSS: [UInt8] = PackageResources.app_css
    /// The app: screens, streams, search, sending text and photos, private groups, the profile (`Web/app.js`).
    static let appJS: [UInt8] = PackageResources.app_js
}
