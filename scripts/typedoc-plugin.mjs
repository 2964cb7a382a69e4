// A TypeDoc plugin for the API reference (typedoc.json names it): pages refer to their icons as `#icon-…`,
// the sprite that assets/icons.js puts into every page, instead of `assets/icons.svg#icon-…`. Browsers refuse a
// `<use>` of another file under file:// (each file is an origin of its own), so the reference opened from disk
// logged an error per icon before icons.js rewrote them; now it loads nothing it may not, from disk or a host.
import { PageEvent } from "typedoc";

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.renderer.on(PageEvent.END, (page) => {
    if (page.contents !== undefined) page.contents = page.contents.replace(/(<use href=")[^"#]*assets\/icons\.svg#/g, "$1#");
  });
}
