package dev.daggers.runtime;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.SpecializedGettersReader;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.unsafe.types.CalendarInterval;
import org.apache.spark.unsafe.types.UTF8String;
import org.apache.spark.unsafe.types.VariantVal;

/**
 * One decoded message as Spark's internal row (RowConverter's schema), read by WireReader. Its
 * singular scalars stay in a long[] as they came off the wire (numbers, booleans, enum numbers,
 * strings as where they lie in the message's bytes), and become Spark's values only when Spark
 * asks for them: a query reads a few of a message's fields, and decoding was bound by the objects
 * it made for all of them (boxed numbers, a UTF8String a string). Repeated fields, nested
 * messages, bytes and the JSON-typed fields are objects, built as they are read.
 *
 * <p>Immutable once WireReader has finished it (copy() is itself, as GenericInternalRow's); its
 * strings point into the message's bytes, which the decoder was given to keep.
 */
final class MessageRow extends InternalRow {
  private static final long serialVersionUID = 1L;
  private static final ArrayData EMPTY = new GenericArrayData(new Object[0]);
  /** A string's bits when its value is the object in its slot (bad UTF-8 replaced, unchecked). */
  static final long REPLACED = -1L;

  final WireReader.Layout layout;
  final byte[] buf;
  final long[] bits;      // by slot, singular scalars: numbers' bits, enum numbers, strings' offset << 32 | length
  Object[] objects;       // by slot: everything else, or null before the first
  private final long[] set;  // by slot, a bit: scalars read, when the type has defaults other than zero

  MessageRow(WireReader.Layout layout, byte[] buf) {
    this.layout = layout;
    this.buf = buf;
    this.bits = new long[layout.fields.length];
    this.set = layout.zeroDefaults ? null : new long[(layout.fields.length + 63) >>> 6];
  }

  void setBits(int slot, long value) {
    bits[slot] = value;
    if (set != null) set[slot >>> 6] |= 1L << slot;
  }

  void setObject(int slot, Object value) {
    if (objects == null) objects = new Object[layout.fields.length];
    objects[slot] = value;
  }

  /** A oneof's other fields back to unset: the last of its fields read is the one it holds. */
  void clearPeers(int[] peers) {
    if (peers == null) return;
    for (int peer : peers) {
      bits[peer] = 0;
      if (set != null) set[peer >>> 6] &= ~(1L << peer);
      if (objects != null) objects[peer] = null;
    }
  }

  Object object(int slot) {
    return objects == null ? null : objects[slot];
  }

  private boolean unset(int slot) {
    return set != null && (set[slot >>> 6] & (1L << slot)) == 0;
  }

  /** An object slot's value, or the field's default when the message did not have it. */
  private Object objectOrDefault(int slot) {
    Object o = object(slot);
    if (o != null) return o;
    if (layout.repeated[slot]) return EMPTY;
    if (layout.nested[slot] != null) return layout.nested[slot].defaults();
    return layout.defaultValue(slot);
  }

  @Override
  public int numFields() {
    return bits.length;
  }

  @Override
  public boolean isNullAt(int ordinal) {
    return layout.kind[ordinal] == WireReader.OBJECT && objectOrDefault(ordinal) == null;
  }

  @Override
  public boolean getBoolean(int ordinal) {
    return unset(ordinal) ? (Boolean) layout.defaultValue(ordinal) : bits[ordinal] != 0;
  }

  @Override
  public int getInt(int ordinal) {
    return unset(ordinal) ? (Integer) layout.defaultValue(ordinal) : (int) bits[ordinal];
  }

  @Override
  public long getLong(int ordinal) {
    return unset(ordinal) ? (Long) layout.defaultValue(ordinal) : bits[ordinal];
  }

  @Override
  public float getFloat(int ordinal) {
    return unset(ordinal) ? (Float) layout.defaultValue(ordinal) : Float.intBitsToFloat((int) bits[ordinal]);
  }

  @Override
  public double getDouble(int ordinal) {
    return unset(ordinal) ? (Double) layout.defaultValue(ordinal) : Double.longBitsToDouble(bits[ordinal]);
  }

  @Override
  public UTF8String getUTF8String(int ordinal) {
    int kind = layout.kind[ordinal];
    if (kind == WireReader.OBJECT) return (UTF8String) objectOrDefault(ordinal);
    if (unset(ordinal)) return (UTF8String) layout.defaultValue(ordinal);
    long b = bits[ordinal];
    if (kind == WireReader.ENUM) return layout.enumName(ordinal, (int) b);
    if (b == REPLACED) return (UTF8String) objects[ordinal];
    int length = (int) b;
    return length == 0 ? UTF8String.EMPTY_UTF8 : UTF8String.fromBytes(buf, (int) (b >>> 32), length);
  }

  @Override
  public byte[] getBinary(int ordinal) {
    return (byte[]) objectOrDefault(ordinal);
  }

  @Override
  public InternalRow getStruct(int ordinal, int numFields) {
    return (InternalRow) objectOrDefault(ordinal);
  }

  @Override
  public ArrayData getArray(int ordinal) {
    return (ArrayData) objectOrDefault(ordinal);
  }

  @Override
  public Object get(int ordinal, DataType dataType) {
    return SpecializedGettersReader.read(this, ordinal, dataType, true, true);
  }

  @Override
  public InternalRow copy() {
    return this;
  }

  // protobuf's fields are none of these types (RowConverter's schema), and the row is read-only
  @Override
  public byte getByte(int ordinal) {
    throw new UnsupportedOperationException("a protobuf field is never a byte");
  }

  @Override
  public short getShort(int ordinal) {
    throw new UnsupportedOperationException("a protobuf field is never a short");
  }

  @Override
  public Decimal getDecimal(int ordinal, int precision, int scale) {
    throw new UnsupportedOperationException("a protobuf field is never a decimal");
  }

  @Override
  public CalendarInterval getInterval(int ordinal) {
    throw new UnsupportedOperationException("a protobuf field is never an interval");
  }

  @Override
  public VariantVal getVariant(int ordinal) {
    throw new UnsupportedOperationException("a protobuf field is never a variant");
  }

  @Override
  public MapData getMap(int ordinal) {
    throw new UnsupportedOperationException("protobuf maps are arrays of key/value rows here");
  }

  @Override
  public void setNullAt(int i) {
    throw new UnsupportedOperationException("a decoded message is read-only");
  }

  @Override
  public void update(int i, Object value) {
    throw new UnsupportedOperationException("a decoded message is read-only");
  }
}
