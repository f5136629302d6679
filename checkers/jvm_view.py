"""A py4j view of the JVM that looks each class and static method up once.

PySpark reaches the JVM's functions through py4j names: every `F.col`, `F.lit` or column list asks
the JVM which class `functions` or `PythonUtils` is (a lookup that first tries the name in the
default package, a miss that searches every jar of the class path), then which member `col` is,
then calls it: three round trips where one does. A check builds its queries with a few thousand
such calls (2,544 lookups in a warm check of a 30-s run), so the lookups are kept here instead.
Classes and static methods do not change while the JVM runs; packages and fields are not kept.
"""

from __future__ import annotations

from typing import Any

from py4j.java_gateway import JavaClass, JavaMember, JVMView  # type: ignore[import-untyped]


class _KeptClass(JavaClass):  # type: ignore[misc]
    """A JVM class whose static methods and nested classes are looked up once each."""

    def __getattr__(self, name: str) -> Any:
        member = super().__getattr__(name)
        if isinstance(member, JavaMember | JavaClass):
            self.__dict__[name] = member  # found before __getattr__ from now on
        return member


class KeptLookupsView(JVMView):  # type: ignore[misc]
    """`view`'s JVM, with the imports it has, whose classes are looked up once each."""

    def __init__(self, view: JVMView) -> None:
        super().__init__(view._gateway_client, view._jvm_name, id=view._id)

    def __getattr__(self, name: str) -> Any:
        found = super().__getattr__(name)
        if isinstance(found, JavaClass):
            found = _KeptClass(found._fqn, self._gateway_client)
            self.__dict__[name] = found
        return found
