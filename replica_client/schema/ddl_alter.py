"""What ALTER TABLE does to a table definition, in the order the server applies it. No I/O.

:class:`AlterRules`: the table's default character set and CONVERT TO first,
then the columns kept in place (a CHANGE/MODIFY without position takes the old
column's), the ADDs and positioned changes in statement order, the primary
key (old parts renamed or dropped, then DROP / ADD), and what CONVERT TO
CHARACTER SET makes of the other columns; a rename of the table, and the
tables of partition exchanges and conversions.
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from . import grammar_nodes as d
from .ddl_charsets import same_label_bytes
from .ddl_columns import MAX_VARCHAR_BYTES, TEXT_BYTES, kind_for_bytes
from .ddl_context import DdlTableState, NotExactError, UnknownTable
from .ddl_create import CreateRules
from .model import TEXT_TYPES, ColumnDef, TableDef


class AlterRules(CreateRules):
    """The rules of ALTER TABLE."""

    # -- ALTER TABLE -------------------------------------------------------------------

    def alter_table(self, node: d.AlterTable) -> None:
        key = self.key(node.this)
        self.touched.add(key)
        actions = list(node.args.get("actions") or [])
        new_key = key
        for action in actions:
            if isinstance(action, exp.AlterRename):
                new_key = self.key(action.this)
            elif isinstance(action, d.Opaque) and action.this in (
                "EXCHANGE PARTITION",
                "CONVERT PARTITION",
                "CONVERT TABLE",
            ):
                other = self.key(action.expression)
                self.touched.add(other)
                if action.this == "CONVERT PARTITION":
                    self.set(other, UnknownTable("made from a partition of another table"))
                elif action.this == "CONVERT TABLE":
                    self.set(other, None)
        old = self.current(key)
        if not any(_changes_definition(a) for a in actions):
            new: DdlTableState = old
        elif isinstance(old, TableDef):
            try:
                new = self.altered(old, actions)
            except NotExactError as exc:
                new = UnknownTable(str(exc))
        else:
            new = (
                old
                if isinstance(old, UnknownTable)
                else UnknownTable("altered while its definition was not known")
            )
        if new_key != key:
            self.set(key, None)
            if new is None:
                new = UnknownTable(f"renamed from {key[0]}.{key[1]}, not known")
            self.set(new_key, new)
        elif new is not old:
            self.set(key, new)

    def altered(self, old: TableDef, actions: list[exp.Expr]) -> TableDef:
        """``old`` after the actions of one ALTER TABLE, in the order the server applies them."""
        cs = self.cs
        # the table's default character set first: new columns take it
        charset: str | None = None
        collation: str | None = None
        convert: tuple[str, str] | None = None
        for action in actions:
            if isinstance(action, d.TableOption):
                if action.this == "CHARACTER SET":
                    charset = action.expression.name
                elif action.this == "COLLATE":
                    collation = action.expression.name
                elif action.this == "WITH SYSTEM VERSIONING":
                    raise NotExactError("system versioning adds hidden row start and end columns")
            elif isinstance(action, d.ConvertCharset):
                coll = action.expression.name if action.expression else None
                target = cs.resolve(action.this.name, coll)
                if convert is not None and target != convert:
                    raise NotExactError("two CONVERT TO CHARACTER SET")  # the servers refuse it
                convert = target
        table_cs: tuple[str, str] | None
        if old.charset is not None and old.collation is not None:
            table_cs = (old.charset, old.collation)
        else:
            table_cs = None
        if convert is not None:
            table_cs = convert
        if charset is not None or collation is not None:
            # with CONVERT TO too (MariaDB), the columns take CONVERT's, the table this one
            table_cs = cs.resolve(charset, collation)

        old_names = {c.name.lower() for c in old.columns}
        drops: dict[str, bool] = {}
        changes: dict[str, d.ChangeColumn] = {}
        renames: dict[str, str] = {}
        visibility: dict[str, bool] = {}
        create: list[tuple[exp.ColumnDef, d.ChangeColumn | None]] = []
        pk: list[str] | None = list(old.primary_key)
        drop_pk = False
        add_pk: list[str] | None = None
        added: set[str] = set()
        name: str | None  # None: an IF EXISTS action of a column the table lacks
        for action in actions:
            if isinstance(action, exp.ColumnDef):
                name = action.name.lower()
                if action.args.get("exists") and (name in old_names or name in added):
                    continue  # ADD COLUMN IF NOT EXISTS of a column the table has
                added.add(name)
                create.append((action, None))
            elif isinstance(action, d.ChangeColumn):
                source = action.args.get("rename_from") or action.this.this
                name = _existing(source, action, old_names, "change")
                if name is None:
                    continue
                if name in changes or name in renames:
                    raise NotExactError(f"column {source.name!r} changed twice")
                changes[name] = action
                added.add(action.this.name.lower())  # what a later ADD IF NOT EXISTS sees
                create.append((action.this, action))
            elif isinstance(action, d.DropColumn):
                name = _existing(action, action, old_names, "drop")
                if name is None:
                    continue
                drops[name] = True
            elif isinstance(action, exp.RenameColumn):
                name = _existing(action.this, action, old_names, "rename")
                if name is None:
                    continue
                if name in renames or name in changes:
                    raise NotExactError(f"column {action.this.name!r} renamed twice")
                renames[name] = action.args["to"].name
            elif isinstance(action, exp.AlterColumn):
                name = _existing(action.this, action, old_names, "alter")
                if name is None:
                    continue
                visible = action.args.get("visible")
                if visible is not None:
                    visibility[name] = visible == "INVISIBLE"
            elif isinstance(action, d.PrimaryKeyDef):
                if add_pk is not None:
                    raise NotExactError("two primary keys added")
                add_pk = self.key_columns(action)
            elif isinstance(action, exp.DropPrimaryKey) or (
                isinstance(action, d.Opaque)
                and action.this == "DROP INDEX"
                and action.expression.name.lower() == "primary"
            ):
                drop_pk = True
            elif not isinstance(
                action, (d.TableOption, d.ConvertCharset, d.Opaque, exp.AlterRename)
            ):
                raise NotExactError(f"ALTER TABLE action {type(action).__name__}")

        # the columns kept, in place (a change without a position takes the old one)
        placed: list[ColumnDef | d.ChangeColumn] = []
        built: dict[int, ColumnDef] = {}
        for kept in old.columns:
            name = kept.name.lower()
            if name in drops:
                continue
            change = changes.get(name)
            if change is not None:
                placed.append(change)
                continue
            if name in renames:
                kept = kept.renamed(renames[name])  # noqa: PLW2901
            if name in visibility:
                kept = replace(kept, invisible=visibility[name])  # noqa: PLW2901
            placed.append(kept)
        inline_pk: list[str] = []
        fresh: set[int] = set()
        for definition, change in create:
            column, is_pk = self.column(definition, convert or table_cs, convert)
            fresh.add(id(column))
            if (
                convert is not None
                and change is not None
                and not self.ctx.mariadb
                and column.data_type in TEXT_TYPES
            ):
                # MySQL sizes it by the changed column's old length in characters
                raise NotExactError("a TEXT column changed with CONVERT TO CHARACTER SET")
            if is_pk:
                inline_pk.append(column.name)
            built[id(change if change is not None else definition)] = column
            position = definition.args.get("position")
            if change is not None and position is None:
                continue
            if change is not None:
                placed.remove(change)
            entry: ColumnDef | d.ChangeColumn = change if change is not None else column
            if position is None:
                placed.append(entry)
            elif position.args.get("position") == "FIRST":
                placed.insert(0, entry)
            else:
                after = position.this.name.lower()
                names = [self.placed_name(p, built) for p in placed]
                if after not in names:
                    raise NotExactError(f"no column {position.this.name!r} to place a column after")
                placed.insert(names.index(after) + 1, entry)
        columns = [p if isinstance(p, ColumnDef) else built[id(p)] for p in placed]

        # the primary key: old key parts renamed or dropped, then DROP / ADD
        renamed = dict(renames)
        for name, change in changes.items():
            renamed[name] = built[id(change)].name
        if pk:
            pk = [renamed.get(n.lower(), n) for n in pk if n.lower() not in drops]
        if drop_pk:
            pk = []
        if add_pk is not None and inline_pk:
            raise NotExactError("a second primary key")
        new_key = add_pk if add_pk is not None else inline_pk
        if new_key:
            if pk or len(inline_pk) > 1:
                raise NotExactError("a second primary key")
            pk = new_key
        if convert is not None:
            # the columns this ALTER defines already have the new character set
            columns = [c if id(c) in fresh else self.converted(c, convert) for c in columns]
        # the key's columns are NOT NULL; a column that leaves the key stays NOT NULL
        return self.table((old.schema, old.name), columns, pk or [], table_cs)

    @staticmethod
    def placed_name(entry: ColumnDef | d.ChangeColumn, built: dict[int, ColumnDef]) -> str:
        if isinstance(entry, ColumnDef):
            return entry.name.lower()
        return built[id(entry)].name.lower() if id(entry) in built else entry.this.name.lower()

    def converted(self, column: ColumnDef, target: tuple[str, str]) -> ColumnDef:
        """A column after CONVERT TO CHARACTER SET: every character column (not those of
        the binary character set) takes the new one; TEXT kinds grow to hold as many
        characters as before."""
        if column.charset is None or column.charset == "binary":
            return column
        cs, coll = target
        old_max = self.cs.maxlen(column.charset)
        new_max = self.cs.maxlen(cs)
        kind = column.data_type
        if kind in TEXT_TYPES:
            chars = TEXT_BYTES[kind] // old_max
            kind = kind_for_bytes(kind, chars * new_max)
        if cs == "binary":
            raise NotExactError("CONVERT TO CHARACTER SET binary")
        if kind == "varchar" and (column.length or 0) * new_max > MAX_VARCHAR_BYTES:
            raise NotExactError(f"VARCHAR({column.length}) in {cs} passes 65535 bytes")
        if column.labels and not same_label_bytes(column.labels, column.charset, cs):
            # the servers keep a label's bytes and read them in the new character set
            raise NotExactError(
                f"CONVERT TO CHARACTER SET {cs} of ENUM/SET {column.name!r}: the server reads "
                f"the labels' {column.charset} bytes as {cs}"
            )
        return replace(column, data_type=kind, charset=cs, collation=coll)


def _existing(column: exp.Expr, action: exp.Expr, old_names: set[str], verb: str) -> str | None:
    """The lower-case name of the table's column that ``action`` (a CHANGE, MODIFY, DROP,
    RENAME or ALTER COLUMN) names by ``column``; None when the table has no such column
    and the action says IF EXISTS.

    Raises:
        NotExactError: no such column, without IF EXISTS.
    """
    name: str = column.name.lower()
    if name in old_names:
        return name
    if action.args.get("exists"):
        return None
    raise NotExactError(f"no column {column.name!r} to {verb}")


def _changes_definition(action: exp.Expr) -> bool:
    """Whether an ALTER TABLE action may change the columns, key or default charset."""
    if isinstance(action, d.TableOption):
        return bool(action.this in ("CHARACTER SET", "COLLATE", "WITH SYSTEM VERSIONING"))
    if isinstance(action, d.Opaque):
        return bool(action.this == "DROP INDEX" and action.expression.name.lower() == "primary")
    if isinstance(action, exp.AlterColumn):
        return action.args.get("visible") is not None
    return not isinstance(action, exp.AlterRename)
