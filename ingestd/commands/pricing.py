"""``ingestd pricing list | set | load FILE``, on the local database or (``--store URL``) the central store."""

from __future__ import annotations

import time
from pathlib import Path

import click
import orjson

from ingestd.commands._common import (
    IntRange,
    db_option,
    emit_json,
    json_option,
    open_db,
    open_reader,
    open_store,
    store_option,
)
from ingestd.commands._store import store_flag
from ingestd.core.timefmt import from_epoch_ns
from ingestd.errors import InputError
from ingestd.files import MIB, read_capped
from ingestd.report.words import plural
from ingestd.store import pricing
from ingestd.store.connection import Reader

PRICE_FILE_MAX_BYTES = 16 * MIB  # a price list is kilobytes: anything this large is the wrong file

store_write_option = store_flag(
    "Write to the central PostgreSQL store (team mode; what `cost --store` prices with) instead of the "
    "local database; the URL holds no password [env INGESTD_STORE]."
)


def _write(db_path: Path | None, store_url: str | None, rows: list[pricing.PriceRow]) -> tuple[int, list[str]]:
    """Add ``rows`` to the central store at ``store_url`` when given, else to the local database;
    the rows written and the warnings given (``_warn_dropped``)."""
    verified_at = from_epoch_ns(time.time_ns())
    if store_url is None:
        conn = open_db(db_path).db
        warnings = _warn_dropped(conn, rows)
        return pricing.add_prices(conn, rows, verified_at=verified_at), warnings
    from ingestd.central import pricing as central_pricing

    store = open_store(store_url)
    warnings = _warn_dropped(store, rows)
    return central_pricing.add_prices(store.conn, rows, verified_at=verified_at), warnings


def _warn_dropped(conn: Reader, rows: list[pricing.PriceRow]) -> list[str]:
    """Warn on stderr of every price dimension a row leaves out that the row in force before it had
    (``pricing.dropped_dimensions``: what happens from the new row on, and how to say "withdrawn")."""
    lines = pricing.dropped_dimensions(conn, rows)
    for line in lines:
        click.secho(f"warning: {line}", err=True, fg="yellow")
    return lines


@click.group("pricing")
def pricing_group() -> None:
    """Read and add model price rows (USD per million tokens, per bucket)."""


@pricing_group.command("list")
@db_option
@store_option
@click.option("--model", default=None, help="Only this exact model id.")
@json_option
def list_cmd(db_path: Path | None, store_url: str | None, model: str | None, as_json: bool) -> None:
    """List price rows."""
    rows = pricing.list_prices(open_reader(db_path, store_url)[0], model)
    if as_json:
        emit_json({"rows": [r.to_json() for r in rows]})
        return
    from rich.console import Console

    from ingestd.report.render import render_prices

    render_prices(Console(), [r.to_json() for r in rows])


@pricing_group.command("set")
@db_option
@store_write_option
@click.argument("model")
@click.option("--effective-from", required=True, help="Date or zoned ISO-8601 instant the rates apply from.")
@click.option("--source", default="operator", show_default=True, help="Where the rates come from.")
@click.option("--input", "input_", type=str, default=None, help="USD per MTok for the input bucket.")
@click.option("--output", type=str, default=None)
@click.option("--cache-read", type=str, default=None)
@click.option("--cache-write-5m", type=str, default=None)
@click.option("--cache-write-1h", type=str, default=None)
@click.option(
    "--long-context-threshold",
    type=IntRange(),
    default=None,
    help="Prompt tokens above which a request is priced at the --long-context rates (at it: standard).",
)
@click.option(
    "--long-context",
    "long_context",
    multiple=True,
    metavar="BUCKET=USD",
    help="Tier rate of one bucket (USD per MTok), one per bucket given; repeatable.",
)
@click.option(
    "--no-long-context",
    is_flag=True,
    help="This version has no long-context tier (withdrawn: prompts over any threshold at the standard rate).",
)
@click.option("--speed", "speeds", multiple=True, metavar="SPEED=X", help="Rate multiplier of usage.speed SPEED.")
@click.option(
    "--no-speed", "no_speeds", multiple=True, metavar="SPEED", help="SPEED costs the standard rate in this version."
)
@click.option(
    "--geo", "geos", multiple=True, metavar="GEO=X", help="Rate multiplier of usage.inference_geo GEO (us=1.1)."
)
@click.option("--no-geo", "no_geos", multiple=True, metavar="GEO", help="GEO costs the global rate in this version.")
@click.option("--web-search-fee", type=str, default=None, help="USD per web search request (with --output).")
@click.option("--no-web-search-fee", is_flag=True, help="Web searches have no fee in this version (with --output).")
@json_option
def set_cmd(
    db_path: Path | None,
    store_url: str | None,
    model: str,
    effective_from: str,
    source: str,
    input_: str | None,
    output: str | None,
    cache_read: str | None,
    cache_write_5m: str | None,
    cache_write_1h: str | None,
    long_context_threshold: int | None,
    long_context: tuple[str, ...],
    no_long_context: bool,
    speeds: tuple[str, ...],
    no_speeds: tuple[str, ...],
    geos: tuple[str, ...],
    no_geos: tuple[str, ...],
    web_search_fee: str | None,
    no_web_search_fee: bool,
    as_json: bool,
) -> None:
    """Add rates for MODEL from --effective-from on (stored usage is re-priced, no re-ingest)."""
    given = {
        "input": input_,
        "output": output,
        "cache_read": cache_read,
        "cache_write_5m": cache_write_5m,
        "cache_write_1h": cache_write_1h,
    }
    rates = {k: v for k, v in given.items() if v is not None}
    if not rates:
        raise InputError("give at least one rate (--input, --output, --cache-read, --cache-write-5m, --cache-write-1h)")
    item: dict[str, object] = {"model": model, "effective_from": effective_from, "rates": rates, "source": source}
    if no_long_context and (long_context_threshold is not None or long_context):
        raise InputError("--no-long-context: give it alone, or a tier (--long-context-threshold, --long-context)")
    if no_web_search_fee and web_search_fee is not None:
        raise InputError("--no-web-search-fee: give it or --web-search-fee, not both")
    if long_context_threshold is not None or long_context:
        item["long_context"] = {
            "threshold": long_context_threshold,
            "rates": _pairs("--long-context", long_context),
        }
    elif no_long_context:
        item["long_context"] = None
    if speeds or no_speeds:
        item["speed_multipliers"] = {**_pairs("--speed", speeds), **dict.fromkeys(no_speeds)}
    if geos or no_geos:
        item["geo_multipliers"] = {**_pairs("--geo", geos), **dict.fromkeys(no_geos)}
    if web_search_fee is not None:
        item["server_tool_fees"] = {"web_search_requests": web_search_fee}
    elif no_web_search_fee:
        item["server_tool_fees"] = None
    try:
        rows = pricing.parse_rows([item], default_source=source)
    except InputError as e:  # the user gave options, not rows: name the option
        raise InputError(_as_option(e), **e.context) from None
    n, warnings = _write(db_path, store_url, rows)
    if as_json:
        emit_json({"written": n, "rows": [r.to_json() for r in rows], "warnings": warnings})
    else:
        click.echo(f"wrote {plural(n, 'price row')} for {model} from {rows[0].effective_from}")


@pricing_group.command("load")
@db_option
@store_write_option
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
def load_cmd(db_path: Path | None, store_url: str | None, file: Path, as_json: bool) -> None:
    """Load price rows from a JSON FILE: [{"model", "effective_from", "rates": {bucket: usd}}].

    A row may also carry "long_context", "speed_multipliers", "geo_multipliers" and
    "server_tool_fees"; null withdraws one ("long_context": null: this version has no tier).
    """
    try:
        doc = orjson.loads(read_capped(file, PRICE_FILE_MAX_BYTES, "price file", InputError))
    except orjson.JSONDecodeError as e:
        raise InputError(f"{file} is not valid JSON: {e}") from e
    rows = pricing.parse_rows(doc, default_source=f"file:{file.name}")
    n, warnings = _write(db_path, store_url, rows)
    if as_json:
        emit_json({"written": n, "rows": [r.to_json() for r in rows], "warnings": warnings})
    else:
        click.echo(f"wrote {plural(n, 'price row')} from {file}")


def register(cli: click.Group) -> None:
    """Add the command to the CLI (``ingestd.cli`` finds this function)."""
    cli.add_command(pricing_group)


# A JSON row's field (``pricing.parse_rows``' ``field``, its first one or two dotted parts) -> the option of ``set``.
_OPTION_OF = {
    "model": "MODEL",
    "effective_from": "--effective-from",
    "long_context.threshold": "--long-context-threshold",
    "long_context.rates": "--long-context",
    "server_tool_fees": "--web-search-fee",
}


def _as_option(e: InputError) -> str:
    """``pricing.parse_rows``' refusal of the one row ``set`` built, naming the option given
    (``--input: ...``, ``--speed fast=...: ...``) instead of "price row 0"."""
    field = str(e.context.get("field", ""))
    head, _, tail = field.rpartition(".")
    if head == "rates":
        option = "--" + tail.replace("_", "-")
    elif head == "speed_multipliers":
        option = f"--speed {tail}=X"
    elif head == "geo_multipliers":
        option = f"--geo {tail}=X"
    elif head == "long_context.rates":
        option = f"--long-context {tail}=USD"
    else:
        option = _OPTION_OF.get(field, "the options")
    return f"{option}: {e.context.get('text', e.message)}"


def _pairs(option: str, values: tuple[str, ...]) -> dict[str, str]:
    """``("a=1", "b=2")`` as ``{"a": "1", "b": "2"}``; InputError naming ``option`` otherwise."""
    out: dict[str, str] = {}
    for v in values:
        key, sep, val = v.partition("=")
        if not sep or not key or not val:
            raise InputError(f"{option} takes NAME=VALUE, got {v!r}")
        out[key] = val
    return out
