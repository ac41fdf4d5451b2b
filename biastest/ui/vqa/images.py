"""Step 2 of the vision-language app, the pictures: shared store, uploads, generation and the gallery.

:func:`build_images_section` lays out each section's controls and wires them
to their handlers, which are the methods of :class:`VQAApp` (bound to the
shared store, a service built once per process — never user data). The work
itself is done on the session by :mod:`biastest.ui.vqa.session` (uploads,
removal, the shared store) and, for generation, by :func:`generate_core`
here. An API key typed by the user is passed to the generator for that one
request and never kept in the session, a file or a log.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

import gradio as gr

from biastest import public
from biastest.errors import DataError, OptionError, StoreError
from biastest.generate.images import (
    LocalDiffusionGenerator,
    OpenAICompatibleImageGenerator,
    OpenAIImageGenerator,
    generate_images,
)
from biastest.generate.prompts import IMAGE_PROMPTS
from biastest.options import DEFAULT_SEED
from biastest.runner.services import GENERATION_MAX_SECONDS, IMAGE_REQUEST_TIMEOUT, generation_limits, shared_dataset
from biastest.ui.common import (
    USER_MISTAKES,
    escape,
    inline_failures,
    option_value,
    progress_callback,
    unlock_step,
    user_errors,
    warn_inline,
)
from biastest.ui.dataset_panel import (
    MSG_PANEL_COMMIT,
    MSG_PANEL_MORE,
    PANEL_MAX_ITEMS,
    build_dataset_panel,
    panel_markdown,
)
from biastest.ui.stop import StopControl, time_limit_hint
from biastest.ui.vqa.session import (
    MSG_GENERATED_NOT_SAVED,
    MSG_GENERATED_SAVED,
    MSG_UPLOAD_PROBLEMS,
    _copy,
    _int_in,
    _spec,
    add_image,
    add_uploads,
    confirm_spec,
    coverage_frame,
    coverage_view,
    gallery_items,
    image_counts,
    remove_image,
    retrieve_from_store,
    save_generated,
    save_to_store,
)

log = logging.getLogger("biastest.ui.vqa")

__all__ = [
    "GEN_COMPATIBLE",
    "GEN_LOCAL",
    "GEN_OPENAI",
    "MSG_PANEL_COMMIT",  # the panel's own messages (biastest.ui.dataset_panel), as before
    "MSG_PANEL_MORE",
    "PANEL_MAX_ITEMS",
    "ImagesSection",
    "VQAApp",
    "add_generated",
    "dataset_panel",
    "build_images_section",
    "generate_core",
    "make_generator",
]

GEN_OPENAI = "openai"
GEN_COMPATIBLE = "compatible"
GEN_LOCAL = "local"
GEN_CHOICES = (
    ("OpenAI images (your own API key, used for this request only)", GEN_OPENAI),
    ("An OpenAI-compatible image service (its web address)", GEN_COMPATIBLE),
    ("A local diffusers model (Hub id or folder)", GEN_LOCAL),
)
IMAGE_SIZES = ("256x256", "512x512", "768x768", "1024x1024")
DEFAULT_OPENAI_IMAGE_MODEL = "gpt-image-1"
MAX_PER_TERM_GENERATE = 50

MSG_NO_API_KEY_TYPED = (
    "Type your OpenAI API key to generate images with OpenAI. It is used for this request only and never stored."
)
#: What each step-2 button does, as its failure message names it (:func:`~biastest.ui.common.inline_failures`: the
#: reason next to the button, in its message box, instead of a red error over the page).
ACTION_CONFIRM = "Checking the specification"
ACTION_UPLOAD = "Adding the pictures"
ACTION_GENERATE = "Generating pictures"
ACTION_REMOVE = "Removing the picture"
ACTION_RETRIEVE = "Getting pictures from the store"
ACTION_SAVE = "Saving the pictures to the store"
MSG_NO_BASE_URL = "Type the web address of the image service, for example http://localhost:8000/v1."
MSG_NO_GENERATOR_MODEL = "Type the name of the image model to use (for example {example})."
MSG_BAD_SIZE = "Choose an image size such as 512x512, got {value!r}."
MSG_GENERATED = "{report}"
MSG_GENERATED_UNUSABLE = "{count} generated picture(s) could not be used ({added} were added):"
MSG_PANEL_NONE_SAVED = (
    "None of your pictures is in the shared store yet. Generated pictures are saved there as soon as they are "
    "made; your uploads only when you press “Save my uploaded pictures to the shared store”."
)
MSG_PANEL_SAVED_HEAD = "Your pictures in the shared store ({n}): {counts}."
MSG_PANEL_ITEM = "a picture of '{term}' ({source}): {state}"
MSG_SAVE_HINT = (
    "Generated pictures are saved to the shared store as soon as they are made. Your uploads stay in your session "
    "unless you press “Save my uploaded pictures to the shared store”; when this server shares test data (see "
    "“Shared dataset” above), saving also shares them on the dataset, for everyone."
)


# --------------------------------------------------------------------------- generation
def _size(value: str | None) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in str(value).lower().split("x"))
    except (TypeError, ValueError):
        raise OptionError(MSG_BAD_SIZE.format(value=value)) from None
    return w, h


def make_generator(source: str, *, api_key: str | None, base_url: str | None, model: str | None,
                   local_model: str | None, size: str | None):
    """The image generator the user chose (the key goes into the client only)."""
    wh = _size(size)
    model = (model or "").strip()
    if source == GEN_OPENAI:
        key = (api_key or "").strip()
        if not key:
            raise OptionError(MSG_NO_API_KEY_TYPED)
        return OpenAIImageGenerator(model or DEFAULT_OPENAI_IMAGE_MODEL, api_key=key, size=wh)
    if source == GEN_COMPATIBLE:
        if not (base_url or "").strip():
            raise OptionError(MSG_NO_BASE_URL)
        if not model:
            raise OptionError(MSG_NO_GENERATOR_MODEL.format(example="stable-diffusion"))
        return OpenAICompatibleImageGenerator(base_url.strip(), model, api_key=(api_key or "").strip() or None,
                                              size=wh)
    if not (local_model or "").strip():
        raise OptionError(MSG_NO_GENERATOR_MODEL.format(example="stabilityai/sd-turbo"))
    return LocalDiffusionGenerator(public.check_model_reference(local_model), size=wh)


def add_generated(session: dict[str, Any], images: Any) -> tuple[int, list[str]]:
    """Add generated images (:class:`~biastest.generate.images.GeneratedImage`) to the session (mutates it)."""
    added, problems = 0, []
    for gi in images:
        try:
            add_image(
                session, gi.png, name=f"{gi.image_term} ({gi.generator})", term=gi.image_term,
                generator=gi.generator, source_kind="generated", prompt=gi.prompt, model=gi.model, seed=gi.seed,
                provenance={**gi.provenance, "prompt_name": gi.prompt_name, "generated_sha256": gi.sha256},
            )
            added += 1
        except DataError as exc:
            problems.append(exc.message)
    return added, problems


def generate_core(
    session: dict[str, Any],
    source: str,
    api_key: str | None,
    base_url: str | None,
    model: str | None,
    local_model: str | None,
    size: str | None,
    per_term: Any,
    prompt_name: str,
    seed: Any,
    *,
    progress=None,
    cancel: threading.Event | None = None,
    max_seconds: float = GENERATION_MAX_SECONDS,
) -> tuple[dict[str, Any], str]:
    """Generate images until every image term has ``per_term`` images; returns the session and the report.

    The run ends early when ``cancel`` is set (the Stop button) or after ``max_seconds``; the images made before
    that are added to the session all the same, and the report says why the run stopped and how many were kept.
    """
    new = _copy(session)
    spec = _spec(new)
    target = _int_in(per_term, name="Images per term", low=1, high=MAX_PER_TERM_GENERATE)
    seed_i = option_value("seed", seed)
    generator = make_generator(source, api_key=api_key, base_url=base_url, model=model, local_model=local_model,
                               size=size)
    run = generate_images(list(spec.group_terms), generator, seed=seed_i, existing_counts=image_counts(new),
                          target_per_term=target, prompt=prompt_name or "portrait", spec_name=spec.name,
                          progress=progress, cancel=cancel,
                          limits=generation_limits(request_timeout=IMAGE_REQUEST_TIMEOUT, max_seconds=max_seconds))
    added, problems = add_generated(new, run.images)
    lines = [escape(MSG_GENERATED.format(report=run.report.message))]
    if problems:
        lines.append(escape(MSG_GENERATED_UNUSABLE.format(count=len(problems), added=added)))
        lines += [f"- {escape(m)}" for m in problems]
    return new, "\n".join(lines)


def dataset_panel(session: dict[str, Any] | None, dataset) -> str:
    """The "Shared dataset" panel: where pictures come from and the sync state of this session's saved pictures.

    ``dataset`` is a :class:`~biastest.store.shared.SharedDataset` (None: no panel, ""). Reads local state only
    (the last pull, the push journal), so it never waits for the network
    (:func:`biastest.ui.dataset_panel.panel_markdown`).
    """
    items = [(item["files"], {"term": item["term"], "source": item["source"]})
             for item in (session or {}).get("shared") or []]
    return panel_markdown(dataset, items, none_saved=MSG_PANEL_NONE_SAVED, head=MSG_PANEL_SAVED_HEAD,
                          item=MSG_PANEL_ITEM)


class VQAApp:
    """The step-2 handlers, bound to the shared store (a service built once per process, never user data).

    Parameters
    ----------
    store : DatasetStore, optional
        The shared store. Default: a :class:`~biastest.store.DatasetStore` at
        its default folder, opened on first use.
    use_store : bool
        False: no shared store at all (no retrieval, no saving).
    dataset : SharedDataset, optional
        The store's link to the shared dataset (the "Shared dataset" panel, "Refresh from the dataset", where
        found pictures come from). Default: with no ``store`` given, the process's
        (:func:`biastest.runner.services.shared_dataset`, whose store is then the shared store); with a
        ``store`` given, none.
    generation_seconds : float
        Time limit of one image-generation run (the Stop button, :attr:`stops`, ends a run sooner; both keep the
        images made until then).
    """

    def __init__(self, store=None, *, use_store: bool = True, dataset=None,
                 generation_seconds: float = GENERATION_MAX_SECONDS) -> None:
        self._store = store if store is not None else (dataset.store if dataset is not None else None)
        self._dataset = dataset
        self._default_dataset = store is None and dataset is None
        self._use_store = use_store or self._store is not None
        self._lock = threading.Lock()
        self.generation_seconds = generation_seconds
        self.stops = StopControl()

    @property
    def has_store(self) -> bool:
        return self._use_store

    def store(self):
        """The shared store (opened on first use); None when the app has none."""
        if not self._use_store:
            return None
        with self._lock:
            if self._store is None:
                self._store = self._shared_dataset().store
            return self._store

    def _shared_dataset(self):
        ds = shared_dataset()
        self._dataset = ds
        return ds

    @property
    def has_dataset(self) -> bool:
        """Whether step 2 shows the "Shared dataset" panel."""
        return self._use_store and (self._dataset is not None or self._default_dataset)

    def dataset(self):
        """The link to the shared dataset (started on first use); None when the app has none."""
        if not self.has_dataset:
            return None
        if self._dataset is None:
            try:
                self.store()
            except StoreError:
                log.warning("the shared store cannot be opened; no shared dataset", exc_info=True)
                return None
        return self._dataset

    def _store_or_none(self):
        try:
            return self.store()
        except StoreError:
            log.warning("the shared store cannot be opened; counts are shown without it", exc_info=True)
            return None

    def step2_view(self, session: dict[str, Any]) -> tuple:
        rows, md = coverage_view(session, self._store_or_none())
        return coverage_frame(rows), md, gallery_items(session)

    def panel(self, session: dict[str, Any] | None) -> str:
        """The "Shared dataset" panel's text (:func:`dataset_panel`); never raises, never waits for the network."""
        try:
            return dataset_panel(session, self.dataset())
        except Exception:  # the panel must never break step 2
            log.exception("the shared-dataset panel could not be drawn")
            return ""

    def panel_handler(self, session):
        """Redraw the panel (a timer calls this every few seconds)."""
        return self.panel(session)

    def refresh_handler(self, session):
        """Ask for a pull from the shared dataset now; returns at once (the pull runs in the background)."""
        ds = self.dataset()
        if ds is not None:
            ds.refresh()
        return self.panel(session)

    @staticmethod
    def mistake(session, exc, *rest) -> tuple:
        """What a handler returns for a mistake the user can fix (:data:`~biastest.ui.common.USER_MISTAKES`).

        The session unchanged, the inline ⚠️ message (a yellow toast too) for the handler's message box, then
        ``rest`` (default: skip) for its other outputs — never a red error over them.
        """
        return (session, warn_inline(exc), *rest)

    @user_errors
    @inline_failures(ACTION_CONFIRM, 9, 1)
    def confirm_handler(self, session, library, g1, g2, a1, a2):
        """Step 1 → step 2: inline ⚠️ message (and a toast) on a problem; unlock the images tab otherwise."""
        try:
            new, msg = confirm_spec(session, library, g1, g2, a1, a2)
        except USER_MISTAKES as exc:
            return self.mistake(session, exc, *(gr.skip(),) * 7)
        tabs, tab2 = unlock_step("data")
        terms = list(new["spec"].group_terms)
        return (new, msg, tabs, tab2, gr.Tab(interactive=False), gr.update(choices=terms, value=terms[0]),
                *self.step2_view(new))

    @user_errors
    @inline_failures(ACTION_UPLOAD, 6, 1)
    def upload_handler(self, session, files, term):
        """Add uploaded pictures for one image term: inline report; a toast when some or all were refused.

        The file box is emptied after every attempt, refused or not, so that the next "Add" (perhaps for
        another image term) never sends these files again.
        """
        try:
            new, md = add_uploads(session, files, term)
        except USER_MISTAKES as exc:
            return self.mistake(session, exc, None, *(gr.skip(),) * 3)
        if "bt-warn" in md:
            gr.Warning(MSG_UPLOAD_PROBLEMS.format(count=md.count("\n- ")))
        return (new, md, None, *self.step2_view(new))

    @user_errors
    @inline_failures(ACTION_GENERATE, 5, 1)
    def generate_handler(self, session, source, api_key, base_url, model, local_model, size, per_term, prompt_name,
                         seed, request: gr.Request = None, progress=gr.Progress()):
        """Generate the missing images for every image term (the key is used for this request only).

        The session's Stop button (:attr:`stops`) or the time limit ends the run early; the images made until
        then are added all the same.
        """
        try:
            with self.stops.running(request) as cancel:
                new, md = generate_core(session, source, api_key, base_url, model, local_model, size, per_term,
                                        prompt_name, seed, progress=progress_callback(progress), cancel=cancel,
                                        max_seconds=self.generation_seconds)
        except USER_MISTAKES as exc:
            return self.mistake(session, exc, *(gr.skip(),) * 3)
        new, saved_md = self.save_generated(new)
        return (new, md + saved_md, *self.step2_view(new))

    def save_generated(self, session: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """Save the session's new generated pictures to the shared store (when there is one): session, report."""
        store = self._store_or_none() if self.has_store else None
        if store is None:
            return session, ""
        try:
            new, count = save_generated(session, store)
        except (StoreError, DataError) as exc:
            log.warning("generated pictures could not be saved to the shared store", exc_info=True)
            return session, "\n\n" + escape(MSG_GENERATED_NOT_SAVED.format(problem=exc.message))
        return new, ("\n\n" + escape(MSG_GENERATED_SAVED.format(count=count))) if count else ""

    @user_errors
    @inline_failures(ACTION_REMOVE, 5, 1)
    def remove_handler(self, session):
        """Remove the selected gallery image (with none selected: an inline message; the gallery stays)."""
        try:
            new, msg = remove_image(session, (session or {}).get("selected"))
        except USER_MISTAKES as exc:
            return self.mistake(session, exc, *(gr.skip(),) * 3)
        return (new, escape(msg), *self.step2_view(new))

    @user_errors
    @inline_failures(ACTION_RETRIEVE, 5, 1)
    def retrieve_handler(self, session, per_term):
        """Copy pictures from the shared store into this session."""
        try:
            ds = self.dataset()
            line = None if ds is None else (lambda ids: ds.found_line("images", ids, what="pictures"))
            new, md = retrieve_from_store(session, self.store(), per_term, found_line=line)
        except USER_MISTAKES as exc:
            return self.mistake(session, exc, *(gr.skip(),) * 3)
        return (new, md, *self.step2_view(new))

    @user_errors
    @inline_failures(ACTION_SAVE, 5, 1)
    def save_handler(self, session):
        """Save this session's uploaded and generated pictures to the shared store."""
        try:
            new, msg = save_to_store(session, self.store())
        except USER_MISTAKES as exc:
            return self.mistake(session, exc, *(gr.skip(),) * 3)
        return (new, escape(msg), *self.step2_view(new))


@user_errors
def gallery_select_handler(session, evt: gr.SelectData):
    """Remember which gallery image is selected."""
    new = _copy(session)
    new["selected"] = evt.index if isinstance(evt.index, int) else None
    img = new["images"][new["selected"]] if new["selected"] is not None and new["selected"] < len(new["images"]) \
        else None
    md = "" if img is None else f"Selected: an image of **{escape(img.image_term)}** ({escape(img.source)})."
    return new, md


@user_errors
def on_generator(source: str):
    """Show the inputs of the chosen image generator."""
    return (
        gr.update(visible=source in (GEN_OPENAI, GEN_COMPATIBLE),
                  label="OpenAI API key (used for this request only, never stored)" if source == GEN_OPENAI
                  else "API key of the service (optional)"),
        gr.update(visible=source == GEN_COMPATIBLE),
        gr.update(visible=source in (GEN_OPENAI, GEN_COMPATIBLE),
                  value=DEFAULT_OPENAI_IMAGE_MODEL if source == GEN_OPENAI else ""),
        gr.update(visible=source == GEN_LOCAL),
        gr.update(value="1024x1024" if source == GEN_OPENAI else "512x512"),
    )


# --------------------------------------------------------------------------- layout and wiring
Resets = list[tuple[Any, Any]]
"""(component, value) pairs that "New bias test" puts back."""


@dataclass
class ImagesSection:
    """What the rest of the app needs from the images part of step 2.

    Attributes
    ----------
    upload_term : gr.Dropdown
        The image term of an upload (its choices are the spec's image terms, set by step 1).
    views : list
        ``[coverage table, coverage text, gallery]``: refreshed by every handler that changes the images
        (:meth:`VQAApp.step2_view` gives their values).
    show_panel : callable
        ``show_panel(event)`` redraws the "Shared dataset" panel after ``event`` (which changed the session).
    resets : list of (component, value)
        What "New bias test" puts back.
    """

    upload_term: Any
    views: list[Any]
    resets: Resets
    show_panel: Any = None


def _dataset_section(handlers: VQAApp, session: gr.State):
    return build_dataset_panel(visible=handlers.has_dataset, session=session, panel_fn=handlers.panel_handler,
                               refresh_fn=handlers.refresh_handler)


def _store_section(handlers: VQAApp, session: gr.State, show_panel):
    with gr.Accordion("Pictures from the shared store", open=False, visible=handlers.has_store,
                      elem_id="store-section"):
        gr.Markdown(
            "The shared store holds pictures that users of this server saved for others, and those pulled from "
            "the shared dataset when one is configured (the column “in the shared store” above counts them). "
            "They are copied into your test; nothing in the store changes.",
            elem_classes=["bt-hint"],
        )
        with gr.Row():
            store_n = gr.Number(10, precision=0, label="Pictures per image term (at most)",
                                elem_id="store-per-term")
            store_btn = gr.Button("Take pictures from the shared store", elem_id="store-retrieve")
        store_md = gr.Markdown("", elem_id="store-message")

    def wire(views: list[Any]) -> None:
        show_panel(store_btn.click(handlers.retrieve_handler, [session, store_n], [session, store_md, *views]))

    return [(store_n, 10), (store_md, "")], wire


def _upload_section(handlers: VQAApp, session: gr.State):
    with gr.Accordion("Upload your own pictures", open=True, elem_id="upload-section"):
        gr.Markdown(
            "Choose the image term the pictures show, pick the files (PNG, JPEG, WebP, GIF, BMP, TIFF) "
            "and press **Add**. Pictures are checked and converted to colour PNG without metadata; "
            "damaged, non-image or very large files are refused with a reason. They stay in your "
            "session unless you save them to the shared store (below the gallery).",
            elem_classes=["bt-hint"],
        )
        with gr.Row():
            upload_term = gr.Dropdown([], label="These pictures show", elem_id="upload-term")
            upload_files = gr.File(label="Picture files", file_count="multiple", type="filepath",
                                   elem_id="upload-files")
        upload_btn = gr.Button("Add these pictures", elem_id="upload-add")
        upload_md = gr.Markdown("", elem_id="upload-message")

    def wire(views: list[Any]) -> None:
        upload_btn.click(handlers.upload_handler, [session, upload_files, upload_term],
                         [session, upload_md, upload_files, *views])

    resets = [(upload_term, gr.update(choices=[], value=None)), (upload_files, None), (upload_md, "")]
    return upload_term, resets, wire


def _generate_section(demo: gr.Blocks, handlers: VQAApp, session: gr.State, show_panel):
    with gr.Accordion("Generate pictures", open=False, elem_id="generate-section"):
        gen_source = gr.Radio([(label, value) for label, value in GEN_CHOICES], value=GEN_OPENAI,
                              label="Image generator", elem_id="gen-source")
        with gr.Row():
            gen_key = gr.Textbox(label="OpenAI API key (used for this request only, never stored)",
                                 type="password", elem_id="gen-key")
            gen_url = gr.Textbox(label="Web address of the image service",
                                 placeholder="http://localhost:8000/v1", visible=False,
                                 elem_id="gen-url")
            gen_model = gr.Textbox(label="Image model", value=DEFAULT_OPENAI_IMAGE_MODEL,
                                   elem_id="gen-model")
            gen_local = gr.Textbox(label="Local diffusers model (Hub id or folder)",
                                   placeholder="stabilityai/sd-turbo", visible=False,
                                   elem_id="gen-local")
        with gr.Row():
            gen_size = gr.Dropdown(list(IMAGE_SIZES), value="1024x1024", label="Image size",
                                   elem_id="gen-size")
            gen_n = gr.Number(4, precision=0, label="Pictures per image term (in total)",
                              elem_id="gen-per-term")
            gen_prompt = gr.Dropdown(
                [(f"{p.name}: “{p.template}”", p.name) for p in IMAGE_PROMPTS.values()],
                value="portrait", label="Prompt", elem_id="gen-prompt")
            gen_seed = gr.Number(DEFAULT_SEED, precision=0, label="Seed", elem_id="gen-seed")
        gr.Markdown(time_limit_hint(handlers.generation_seconds), elem_classes=["bt-hint"])
        with gr.Row():
            gen_btn = gr.Button("Generate the missing pictures", elem_id="gen-run")
            gen_stop = StopControl.button("gen-stop")
        gen_md = gr.Markdown("", elem_id="gen-message")

    def wire(views: list[Any]) -> None:
        gen_source.change(on_generator, gen_source, [gen_key, gen_url, gen_model, gen_local, gen_size], queue=False)
        run = handlers.stops.wire(demo, generate_btn=gen_btn, stop_btn=gen_stop, fn=handlers.generate_handler,
                            inputs=[session, gen_source, gen_key, gen_url, gen_model, gen_local, gen_size, gen_n,
                                    gen_prompt, gen_seed],
                            outputs=[session, gen_md, *views], api_name="generate_images",
                            concurrency_id="vqa-generate", concurrency_limit=1)
        show_panel(run)

    resets = [
        (gen_source, GEN_OPENAI), (gen_key, ""), (gen_url, ""), (gen_model, DEFAULT_OPENAI_IMAGE_MODEL),
        (gen_local, ""), (gen_size, "1024x1024"), (gen_n, 4), (gen_prompt, "portrait"), (gen_seed, 0), (gen_md, ""),
    ]
    return resets, wire


def _gallery_section(handlers: VQAApp, session: gr.State, show_panel):
    gallery = gr.Gallery(label="Test images (click one to select it)", columns=8, height=300,
                         allow_preview=False, elem_id="image-gallery")
    with gr.Row():
        remove_btn = gr.Button("Remove the selected image", elem_id="remove-image")
        save_btn = gr.Button("Save my uploaded pictures to the shared store",
                             visible=handlers.has_store, elem_id="save-to-store")
    gr.Markdown(escape(MSG_SAVE_HINT), visible=handlers.has_store, elem_classes=["bt-hint"], elem_id="save-hint")
    gallery_md = gr.Markdown("", elem_id="gallery-message")

    def wire(views: list[Any]) -> None:
        gallery.select(gallery_select_handler, session, [session, gallery_md], queue=False)
        remove_btn.click(handlers.remove_handler, session, [session, gallery_md, *views])
        show_panel(save_btn.click(handlers.save_handler, session, [session, gallery_md, *views],
                                  concurrency_id="vqa-store", concurrency_limit=1))

    return gallery, [(gallery, []), (gallery_md, "")], wire


def build_images_section(demo: gr.Blocks, handlers: VQAApp, session: gr.State) -> ImagesSection:
    """Lay out the images part of step 2 (inside its tab) and wire each section to its handlers."""
    gr.Markdown("### Images for every image term")
    show_panel, dataset_resets, wire_dataset = _dataset_section(handlers, session)
    coverage_md = gr.Markdown("", elem_id="coverage-summary")
    coverage_df = gr.Dataframe(label="Images per image term", interactive=False,
                               elem_id="coverage-table")
    store_resets, wire_store = _store_section(handlers, session, show_panel)
    upload_term, upload_resets, wire_upload = _upload_section(handlers, session)
    gen_resets, wire_generate = _generate_section(demo, handlers, session, show_panel)
    gallery, gallery_resets, wire_gallery = _gallery_section(handlers, session, show_panel)
    views = [coverage_df, coverage_md, gallery]
    for wire in (wire_dataset, wire_upload, wire_generate, wire_gallery, wire_store):
        wire(views)
    resets = [(coverage_md, ""), (coverage_df, coverage_frame([])), *store_resets, *upload_resets, *gen_resets,
              *gallery_resets, *dataset_resets]
    return ImagesSection(upload_term=upload_term, views=views, resets=resets, show_panel=show_panel)
